package etcdtest

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/pushgate/pushgate/journal"
)

// compactRequest asks a member to compact the history before pos and wait
// for it.
func compactRequest(pos journal.Position) *pb.CompactionRequest {
	return &pb.CompactionRequest{Revision: int64(pos), Physical: true}
}
