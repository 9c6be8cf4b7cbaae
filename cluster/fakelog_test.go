package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/pushgate/pushgate/journal"
)

// fakeEtcd is an in-memory shared log with an election, standing in for
// etcd: the replicas of a test each get a fakeLog on one fakeEtcd.
type fakeEtcd struct {
	mu sync.Mutex
	// changed is closed and replaced on every commit, election change and
	// delivery.
	changed   chan struct{}
	rev       journal.Position
	kv        map[string][]byte
	history   []fakeEntry
	compacted journal.Position
	leader    *fakeLog
	// failNext fails the next commit with this error; one wrapping
	// journal.ErrAmbiguous commits it all the same.
	failNext error
}

type fakeEntry struct {
	rev       journal.Position
	ops       []journal.Op
	writer    *fakeLog
	ambiguous bool
}

func newFakeEtcd() *fakeEtcd {
	return &fakeEtcd{changed: make(chan struct{}), kv: map[string][]byte{}}
}

// broadcast wakes every waiter. e.mu must be held.
func (e *fakeEtcd) broadcast() {
	close(e.changed)
	e.changed = make(chan struct{})
}

// commit appends a batch. e.mu must be held.
func (e *fakeEtcd) commit(writer *fakeLog, ops []journal.Op, ambiguous bool) journal.Position {
	e.rev++
	for _, op := range ops {
		switch op.Kind {
		case journal.OpSet:
			e.kv[op.Key] = slices.Clone(op.Value)
		case journal.OpDelete:
			delete(e.kv, op.Key)
		case journal.OpDeleteAll:
			clear(e.kv)
		}
	}
	e.history = append(e.history, fakeEntry{rev: e.rev, ops: slices.Clone(ops), writer: writer, ambiguous: ambiguous})
	e.broadcast()
	return e.rev
}

// kill ends l's session: its term ends and another replica may lead.
func (e *fakeEtcd) kill(l *fakeLog) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l.dead = true
	l.endTerm()
	if e.leader == l {
		e.leader = nil
	}
	e.broadcast()
}

// fakeLog is one replica's view of a fakeEtcd.
type fakeLog struct {
	e   *fakeEtcd
	url string
	// Guarded by e.mu.
	termDone  chan struct{}
	delivered journal.Position
	dead      bool
	// watchErr, when set, ends the running Follow with it.
	watchErr error
	// paused holds Follow's deliveries.
	paused bool
	// currentFails makes Current fail.
	currentFails bool
	// beforeCurrent, when set, runs at the start of each Current call.
	beforeCurrent func()
}

func (e *fakeEtcd) log(url string) *fakeLog { return &fakeLog{e: e, url: url} }

// endTerm ends l's live term. e.mu must be held.
func (l *fakeLog) endTerm() {
	if l.termDone != nil {
		close(l.termDone)
		l.termDone = nil
	}
}

func (l *fakeLog) Append(ops ...journal.Op) (journal.Commit, error) {
	e := l.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.leader != l || l.termDone == nil {
		return nil, fmt.Errorf("append: %w", journal.ErrNotLeader)
	}
	if err := e.failNext; err != nil {
		e.failNext = nil
		if errors.Is(err, journal.ErrAmbiguous) {
			e.commit(l, ops, true)
		}
		l.endTerm()
		e.broadcast()
		return fakeCommit{err: err}, nil
	}
	return fakeCommit{pos: e.commit(l, ops, false)}, nil
}

type fakeCommit struct {
	pos journal.Position
	err error
}

func (c fakeCommit) Wait(context.Context) error { return c.err }
func (c fakeCommit) Position() journal.Position { return c.pos }

func (l *fakeLog) Load(_ context.Context, fn func(string, []byte) error) (journal.Position, error) {
	e := l.e
	e.mu.Lock()
	kv, rev := maps.Clone(e.kv), e.rev
	e.mu.Unlock()
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		if err := fn(k, kv[k]); err != nil {
			return 0, err
		}
	}
	return rev, nil
}

func (l *fakeLog) Follow(ctx context.Context, from journal.Position, fn func(journal.Batch) error) error {
	e := l.e
	for {
		e.mu.Lock()
		if err := l.watchErr; err != nil {
			l.watchErr = nil
			e.mu.Unlock()
			return err
		}
		if from < e.compacted {
			e.mu.Unlock()
			return fmt.Errorf("follow from %d: %w", from, journal.ErrCompacted)
		}
		var next []fakeEntry
		if !l.paused {
			for _, en := range e.history {
				if en.rev > from {
					next = append(next, en)
				}
			}
		}
		changed := e.changed
		e.mu.Unlock()
		for _, en := range next {
			if err := fn(journal.Batch{Position: en.rev, Ops: en.ops, Own: en.writer == l && !en.ambiguous}); err != nil {
				return err
			}
			from = en.rev
			e.mu.Lock()
			l.delivered = en.rev
			e.broadcast()
			e.mu.Unlock()
		}
		if len(next) > 0 {
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (l *fakeLog) Current(context.Context) (journal.Position, error) {
	if l.beforeCurrent != nil {
		l.beforeCurrent()
	}
	l.e.mu.Lock()
	defer l.e.mu.Unlock()
	if l.currentFails {
		return 0, errors.New("etcdserver: request timed out")
	}
	return l.e.rev, nil
}

func (l *fakeLog) Campaign(ctx context.Context) error {
	e := l.e
	var barrier journal.Position
	for {
		e.mu.Lock()
		if l.dead {
			e.mu.Unlock()
			return errors.New("session lost")
		}
		if barrier == 0 && (e.leader == nil || e.leader == l) {
			if e.leader == l && l.termDone != nil {
				e.mu.Unlock()
				return nil
			}
			e.leader = l
			l.termDone = make(chan struct{})
			barrier = e.commit(l, nil, false)
		}
		if barrier != 0 && l.delivered >= barrier {
			e.mu.Unlock()
			return nil
		}
		changed := e.changed
		e.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (l *fakeLog) TermDone() <-chan struct{} {
	l.e.mu.Lock()
	defer l.e.mu.Unlock()
	if l.termDone == nil {
		done := make(chan struct{})
		close(done)
		return done
	}
	return l.termDone
}

func (l *fakeLog) Leader(context.Context) (string, error) {
	l.e.mu.Lock()
	defer l.e.mu.Unlock()
	if l.e.leader == nil {
		return "", nil
	}
	return l.e.leader.url, nil
}

// breakWatch ends l's running Follow with err.
func (l *fakeLog) breakWatch(err error) {
	l.e.mu.Lock()
	defer l.e.mu.Unlock()
	l.watchErr = err
	l.e.broadcast()
}

// EndTermOf ends the term of the replica at url, if it leads: its
// election key is gone, and another replica may win.
func (l *fakeLog) EndTermOf(_ context.Context, url string) (bool, error) {
	e := l.e
	e.mu.Lock()
	defer e.mu.Unlock()
	leader := e.leader
	if leader == nil || leader.url != url || leader == l {
		return false, nil
	}
	leader.endTerm()
	e.leader = nil
	e.broadcast()
	return true, nil
}

// failCurrent makes l's Current fail (or work again), as with a lost
// quorum.
func (l *fakeLog) failCurrent(fail bool) {
	l.e.mu.Lock()
	defer l.e.mu.Unlock()
	l.currentFails = fail
}

// pause holds (or resumes) l's Follow deliveries.
func (l *fakeLog) pause(paused bool) {
	l.e.mu.Lock()
	defer l.e.mu.Unlock()
	l.paused = paused
	l.e.broadcast()
}

// compact forgets the history up to the latest commit.
func (e *fakeEtcd) compact() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.compacted = e.rev
	e.history = nil
}
