package web

import (
	"net/http"
	"strconv"

	"github.com/pushgate/pushgate/journal"
)

// setCommitPosition sets CommitPositionHeader on the answer to a write
// committed at pos (0: no log, nothing to wait for): a replica that applied
// pos shows the write's effect, so a forwarding replica answers its client
// once it has.
func setCommitPosition(w http.ResponseWriter, pos journal.Position) {
	if pos > 0 {
		w.Header().Set(CommitPositionHeader, strconv.FormatUint(uint64(pos), 10))
	}
}
