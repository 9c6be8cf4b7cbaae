package cluster

import (
	"context"

	"github.com/pushgate/pushgate/journal"
)

// Log is the shared log a replica reads and writes: the etcd backend
// (journal/etcdlog) implements it. Append takes writes only during a term
// of this replica's (see Campaign) and fails wrapping journal.ErrNotLeader
// otherwise.
type Log interface {
	journal.Log
	journal.Snapshotter
	journal.Follower
	// Current returns the position of the log's latest commit, read from a
	// quorum: a replica that applied it is current.
	Current(ctx context.Context) (journal.Position, error)
	// Campaign blocks until this replica leads a term: it won the
	// election, and the running Follow delivered the term's first position,
	// so that the store following the log holds everything committed
	// before the term. It returns at once during a live term.
	Campaign(ctx context.Context) error
	// TermDone returns a channel closed when the current term ends (at the
	// first failed commit, a lost session, or Close); it is closed already
	// when no term is live.
	TermDone() <-chan struct{}
	// Leader returns the advertised URL of the replica leading, "" when
	// none does.
	Leader(ctx context.Context) (string, error)
	// EndTermOf ends the term of the replica advertised at url, if it
	// leads, without waiting for its lease to expire, and reports whether
	// it did. Fencing keeps that safe; it is called only when the process
	// at url is known to be gone.
	EndTermOf(ctx context.Context, url string) (bool, error)
}
