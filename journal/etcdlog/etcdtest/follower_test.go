package etcdtest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/journal/etcdlog"
)

// follower runs a Log's Follow into an in-memory map of groups and keeps
// every batch, for tests to look at.
type follower struct {
	mu      sync.Mutex
	groups  map[string]string
	batches []journal.Batch
	applied journal.Position
	err     error

	cancel context.CancelFunc
	done   chan struct{}
}

// follow loads l's groups and follows l from there until the test ends.
func follow(t testing.TB, l *etcdlog.Log) *follower {
	t.Helper()
	f := &follower{groups: make(map[string]string), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	pos, err := l.Load(ctx, func(key string, value []byte) error {
		f.groups[key] = string(value)
		return nil
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	f.applied = pos
	go func() {
		defer close(f.done)
		err := l.Follow(ctx, pos, f.apply)
		f.mu.Lock()
		f.err = err
		f.mu.Unlock()
	}()
	t.Cleanup(f.stop)
	return f
}

func (f *follower) apply(b journal.Batch) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, op := range b.Ops {
		switch op.Kind {
		case journal.OpSet:
			f.groups[op.Key] = string(op.Value)
		case journal.OpDelete:
			delete(f.groups, op.Key)
		default:
			return errors.New("unexpected op " + op.Kind.String())
		}
	}
	f.batches = append(f.batches, b)
	f.applied = b.Position
	return nil
}

// stop ends the Follow and waits for it.
func (f *follower) stop() {
	f.cancel()
	<-f.done
}

func (f *follower) position() journal.Position {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied
}

func (f *follower) group(key string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.groups[key]
	return v, ok
}

func (f *follower) allBatches() []journal.Batch {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.batches)
}
