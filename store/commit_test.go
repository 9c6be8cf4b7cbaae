package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/journal"
)

// heldLog is a journal.Log whose commits complete when the test says.
type heldLog struct {
	mu      sync.Mutex
	commits []*heldCommit
}

type heldCommit struct {
	pos  journal.Position
	done chan error
	err  error
}

func (l *heldLog) Append(...journal.Op) (journal.Commit, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := &heldCommit{pos: journal.Position(len(l.commits) + 1), done: make(chan error, 1)}
	l.commits = append(l.commits, c)
	return c, nil
}

// appended waits until n batches were appended and returns the nth.
func (l *heldLog) appended(t *testing.T, n int) *heldCommit {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		if len(l.commits) >= n {
			c := l.commits[n-1]
			l.mu.Unlock()
			return c
		}
		l.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("batch %d was never appended", n)
	return nil
}

func (c *heldCommit) Wait(ctx context.Context) error {
	select {
	case err := <-c.done:
		c.err = err
		c.done <- err
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *heldCommit) Position() journal.Position { return c.pos }

// TestAFailedBatchRollsBackItselfAndLaterOnesOnly: batch 1 (group a) is
// still in flight when batch 2 (group b) fails; b is rolled back, a stays
// pending, unserved, and is served once durable.
func TestAFailedBatchRollsBackItselfAndLaterOnesOnly(t *testing.T) {
	s := New(Options{})
	log := &heldLog{}
	s.SetJournal(log)
	errs := make(chan error, 2)
	go func() { errs <- push(t, s, storetest.Key("job", "a"), Replace, "a 1\n", t0) }()
	first := log.appended(t, 1)
	go func() { errs <- push(t, s, storetest.Key("job", "b"), Replace, "b 1\n", t0) }()
	second := log.appended(t, 2)
	second.done <- errors.New("disk gone")
	var perr *PersistenceError
	if err := <-errs; !errors.As(err, &perr) {
		t.Fatalf("failed batch answered %v, want a PersistenceError", err)
	}
	if s.Group(storetest.Key("job", "b")) != nil {
		t.Error("the failed batch's group is served")
	}
	if s.Group(storetest.Key("job", "a")) != nil {
		t.Fatal("the batch in flight is served before it is durable")
	}
	first.done <- nil
	if err := <-errs; err != nil {
		t.Fatalf("durable batch answered %v", err)
	}
	if s.Group(storetest.Key("job", "a")) == nil {
		t.Error("the durable batch's group is gone")
	}
}
