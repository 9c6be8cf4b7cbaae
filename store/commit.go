package store

import (
	"context"
	"slices"

	"github.com/pushgate/pushgate/journal"
)

// undo remembers what a not yet durable change replaced, so that a journal
// failure can take it back.
type undo struct {
	commit journal.Commit
	groups []undoGroup
}

type undoGroup struct {
	gid  string
	prev *Group
}

// commitLocked installs the new groups (nil removes) and appends ops to the
// journal as one atomic batch. If the journal refuses the append, the change
// is undone at once. s.mu must be held.
func (s *Store) commitLocked(undos []undoGroup, next []*Group, ops ...journal.Op) (journal.Commit, error) {
	for i, u := range undos {
		s.install(u.gid, u.prev, next[i])
	}
	if s.journal == nil {
		return nil, nil
	}
	c, err := s.journal.Append(ops...)
	if err != nil {
		s.rollback([]undo{{groups: undos}})
		return nil, &PersistenceError{Err: err}
	}
	s.pending = append(s.pending, undo{commit: c, groups: undos})
	return c, nil
}

// wait blocks until c is durable. If it failed, its change is rolled back,
// with every change appended after it (which the log will not make durable
// either, and which were checked against it), newest first; changes
// appended before it are left to their own waiters.
func (s *Store) wait(ctx context.Context, c journal.Commit) error {
	if c == nil {
		return nil
	}
	err := c.Wait(ctx)
	if err != nil && ctx.Err() != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := slices.IndexFunc(s.pending, func(u undo) bool { return u.commit == c })
	if err == nil {
		// Batches become durable in order: c and every batch before it
		// are durable now.
		if k >= 0 {
			s.pending = slices.Delete(s.pending, 0, k+1)
		}
		return nil
	}
	if k >= 0 {
		s.rollback(s.pending[k:])
		s.pending = s.pending[:k]
	}
	return &PersistenceError{Err: err}
}

// rollback takes back the changes of us, newest first. s.mu must be held.
func (s *Store) rollback(us []undo) {
	for i := len(us) - 1; i >= 0; i-- {
		for j := len(us[i].groups) - 1; j >= 0; j-- {
			ug := us[i].groups[j]
			s.install(ug.gid, s.groups[ug.gid], ug.prev)
		}
	}
}
