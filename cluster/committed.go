package cluster

import (
	"context"
	"sync/atomic"

	"github.com/pushgate/pushgate/journal"
)

// committedLog is the journal.Log a replica's stores write through: the
// replica's Log, recording the highest position any of its commits
// reached, which the leader hands a forwarding replica to wait for.
type committedLog struct {
	log       journal.Log
	committed *atomic.Uint64
}

// Append appends ops to the log.
func (l committedLog) Append(ops ...journal.Op) (journal.Commit, error) {
	c, err := l.log.Append(ops...)
	if err != nil {
		return nil, err
	}
	return committedCommit{Commit: c, committed: l.committed}, nil
}

// committedCommit records its position once it is known committed.
type committedCommit struct {
	journal.Commit
	committed *atomic.Uint64
}

// Wait waits for the commit and records its position when it succeeded.
func (c committedCommit) Wait(ctx context.Context) error {
	if err := c.Commit.Wait(ctx); err != nil {
		return err
	}
	raise(c.committed, uint64(c.Position()))
	return nil
}

// raise sets v to n unless it already holds more.
func raise(v *atomic.Uint64, n uint64) {
	for {
		old := v.Load()
		if old >= n || v.CompareAndSwap(old, n) {
			return
		}
	}
}
