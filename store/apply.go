package store

import (
	"fmt"

	"github.com/pushgate/pushgate/groupcodec"
	"github.com/pushgate/pushgate/journal"
)

// Apply applies a batch of changes another writer committed at position pos
// of the log: what a replica follows from the cluster. Every replica applies
// the same batches in the same order through this one path, so they hold
// the same groups. The writer checked each change against the same rules
// before committing it, so a change the index refuses here is a bug: it is
// applied anyway (skipping it would make this replica differ from the
// others), counted (ApplyConflicts) and logged. Groups are decoded before
// the store's lock is taken, and the whole batch is installed under it, so
// a scrape sees all of it or none. Apply keeps no reference to the ops'
// values (a follower's log reuses their memory).
func (s *Store) Apply(pos journal.Position, ops []journal.Op) error {
	type change struct {
		gid      string
		next     *Group
		prepared []preparedFamily
		all      bool
	}
	changes := make([]change, 0, len(ops))
	for _, op := range ops {
		switch op.Kind {
		case journal.OpSet:
			rec, err := groupcodec.Decode(op.Value)
			if err != nil {
				return fmt.Errorf("apply position %d: group %q: %w", pos, op.Key, err)
			}
			g, prepared, err := s.storedGroup(recordKey(&rec), &rec)
			if err != nil {
				return fmt.Errorf("apply position %d: group %q: %w", pos, op.Key, err)
			}
			changes = append(changes, change{gid: op.Key, next: g, prepared: prepared})
		case journal.OpDelete:
			changes = append(changes, change{gid: op.Key})
		case journal.OpDeleteAll:
			changes = append(changes, change{all: true})
		default:
			return fmt.Errorf("apply position %d: unknown op %v", pos, op.Kind)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range changes {
		switch {
		case c.all:
			for gid, g := range s.groups {
				s.install(gid, g, nil)
			}
		case c.next == nil:
			if old := s.groups[c.gid]; old != nil {
				s.install(c.gid, old, nil)
			}
		default:
			old := s.groups[c.gid]
			if err := s.index.check(c.gid, familiesOf(old), c.next.families, c.prepared, s.ownerName); err != nil {
				s.applyConflicts++
				s.logger.Error("applying a committed change that conflicts with the store: a bug, applied anyway so that replicas stay equal",
					"position", uint64(pos), "group", c.next.key.String(), "err", err)
			}
			s.install(c.gid, old, c.next)
		}
	}
	if pos > s.applied {
		s.applied = pos
	}
	return nil
}

// MarkApplied records that the store holds every change up to pos: a
// batch this store's own log committed (journal.Batch.Own), whose change
// was installed when it was pushed.
func (s *Store) MarkApplied(pos journal.Position) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pos > s.applied {
		s.applied = pos
	}
}

// Applied returns the highest log position Apply has applied.
func (s *Store) Applied() journal.Position {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied
}

// ApplyConflicts returns how many applied changes the consistency index
// refused (each one a bug; see Apply).
func (s *Store) ApplyConflicts() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applyConflicts
}
