package store

import (
	"context"
	"slices"

	"github.com/pushgate/pushgate/journal"
)

// A change moves through two states of the store, as a TSDB appender's
// samples do (nothing is visible before Commit):
//
//   - the head: committed state plus every change appended to the journal
//     and not yet known durable. Validation reads the head (the consistency
//     index, the limits' totals, the group a push merges into), so two
//     conflicting pushes of one batch cannot both pass.
//   - the served state (groups, the scrape order): committed changes only.
//     Scrapes, the API and the UI read it, so nothing they show is ever
//     rolled back.
//
// commitLocked moves a change into the head and appends it; settle
// publishes it once the journal says it is durable, in append order, or
// takes it (and every later change, which was checked against it) back out
// of the head when the journal failed.

// change is one group's change: its head state before (prev) and after
// (next); nil is absent.
type change struct {
	gid        string
	prev, next *Group
}

// pendingBatch is a batch of changes appended to the journal and not yet
// known durable.
type pendingBatch struct {
	commit  journal.Commit
	changes []change
}

// headState is the head's state of a group that pending changes touch:
// the latest of them, and how many there are.
type headState struct {
	g *Group
	n int
}

// headGroup returns group gid as the head holds it: its latest pending
// state, or else its committed one. s.mu must be held.
func (s *Store) headGroup(gid string) *Group {
	if h, ok := s.overlay[gid]; ok {
		return h.g
	}
	return s.groups[gid]
}

// eachHeadGroup calls fn for every group present in the head. s.mu must be
// held.
func (s *Store) eachHeadGroup(fn func(gid string, g *Group)) {
	for gid, g := range s.groups {
		if _, ok := s.overlay[gid]; !ok {
			fn(gid, g)
		}
	}
	for gid, h := range s.overlay {
		if h.g != nil {
			fn(gid, h.g)
		}
	}
}

// commitLocked moves changes into the head (the index and the overlay) and
// appends ops, which record them, to the journal as one atomic batch. With
// no journal, the changes are installed (head and served state) at once
// and the commit is nil. If the journal refuses the append, they are taken
// back out of the head. The returned commit is settled by wait. s.mu must
// be held.
func (s *Store) commitLocked(changes []change, ops ...journal.Op) (journal.Commit, error) {
	if s.journal == nil {
		// Committed as soon as made: straight to the served state, with
		// no trip through the overlay (one allocation and two map
		// operations a push fewer).
		for _, c := range changes {
			s.install(c.gid, c.prev, c.next)
		}
		return nil, nil
	}
	for _, c := range changes {
		s.reindex(c.gid, c.prev, c.next)
		h := s.overlay[c.gid]
		if h == nil {
			h = &headState{}
			s.overlay[c.gid] = h
		}
		h.g = c.next
		h.n++
	}
	c, err := s.journal.Append(ops...)
	if err != nil {
		s.rollbackLocked(changes)
		return nil, &PersistenceError{Err: err}
	}
	s.pending = append(s.pending, pendingBatch{commit: c, changes: changes})
	return c, nil
}

// wait blocks until c is durable and published, and returns its position
// (0 for a nil commit: a store without a journal).
// If it failed, its changes are taken back out of the head with every change
// appended after it (which the log will not make durable either, and which
// were checked against it), newest first; changes appended before it are
// settled by their own waits. When ctx ends first, the commit is settled in
// the background: it is published or taken back all the same.
func (s *Store) wait(ctx context.Context, c journal.Commit) (journal.Position, error) {
	if c == nil {
		// No journal: the change was installed when it was made, and
		// there is no position to wait for.
		return 0, nil
	}
	err := c.Wait(ctx)
	if err != nil && ctx.Err() != nil {
		go func() { _, _ = s.settle(c, c.Wait(context.Background())) }()
		return 0, err
	}
	return s.settle(c, err)
}

// settle publishes c and every batch appended before it when err is nil
// (batches become durable in order), or takes c and every batch appended
// after it back out of the head.
func (s *Store) settle(c journal.Commit, err error) (journal.Position, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := slices.IndexFunc(s.pending, func(b pendingBatch) bool { return b.commit == c })
	if err == nil {
		for _, b := range s.pending[:k+1] {
			s.publishLocked(b.changes, b.commit.Position())
		}
		if k >= 0 {
			clear(s.pending[:k+1])
			s.pending = s.pending[k+1:]
		}
		return c.Position(), nil
	}
	if k >= 0 {
		for i := len(s.pending) - 1; i >= k; i-- {
			s.rollbackLocked(s.pending[i].changes)
		}
		clear(s.pending[k:])
		s.pending = s.pending[:k]
	}
	return 0, &PersistenceError{Err: err}
}

// publishLocked makes committed changes visible: each replaces its group's
// served state, and leaves the head overlay once no later pending change
// of its group remains. pos, when not 0, is the position the changes were
// committed at. s.mu must be held.
func (s *Store) publishLocked(changes []change, pos journal.Position) {
	for _, c := range changes {
		s.publish(c.gid, s.groups[c.gid], c.next)
		if h := s.overlay[c.gid]; h != nil {
			if h.n--; h.n == 0 {
				delete(s.overlay, c.gid)
			}
		}
	}
	if pos > s.applied {
		s.applied = pos
	}
}

// rollbackLocked takes changes back out of the head, newest first. s.mu
// must be held.
func (s *Store) rollbackLocked(changes []change) {
	for i := len(changes) - 1; i >= 0; i-- {
		c := changes[i]
		s.reindex(c.gid, c.next, c.prev)
		if h := s.overlay[c.gid]; h != nil {
			h.g = c.prev
			if h.n--; h.n == 0 {
				delete(s.overlay, c.gid)
			}
		}
	}
}

// lastPending returns the newest commit not yet settled, or nil. s.mu must
// be held.
func (s *Store) lastPending() journal.Commit {
	if len(s.pending) == 0 {
		return nil
	}
	return s.pending[len(s.pending)-1].commit
}
