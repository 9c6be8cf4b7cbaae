package store

import (
	"fmt"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/groupcodec"
	"github.com/pushgate/pushgate/journal"
)

// Apply applies a batch of changes committed at position pos of the log:
// what a replica follows from the cluster. Every replica applies the same
// batches in the same order through this path, and restoring or loading a
// log goes through the same rule (applyLocked), so a store that loaded a
// log and one that followed it hold the same groups. Groups are decoded
// before the store's lock is taken, and the whole batch is installed under
// it, so a scrape sees all of it or none. Apply keeps no reference to the
// ops' values (a follower's log reuses their memory).
func (s *Store) Apply(pos journal.Position, ops []journal.Op) error {
	type decoded struct {
		gid      string
		next     *Group
		prepared []admission.Family
		all      bool
	}
	changes := make([]decoded, 0, len(ops))
	for _, op := range ops {
		switch op.Kind {
		case journal.OpSet:
			rec, err := groupcodec.Decode(op.Value)
			if err != nil {
				return fmt.Errorf("apply position %d: group %q: %w", pos, op.Key, err)
			}
			// What the record did not change is taken from the group
			// held before the batch (storedGroup), which compares with
			// it rather than trusting it: an earlier op of the batch
			// may have set the group since.
			g, prepared, err := s.storedGroup(recordKey(&rec), &rec, s.committedGroup(op.Key))
			if err != nil {
				return fmt.Errorf("apply position %d: group %q: %w", pos, op.Key, err)
			}
			changes = append(changes, decoded{gid: op.Key, next: g, prepared: prepared})
		case journal.OpDelete:
			changes = append(changes, decoded{gid: op.Key})
		case journal.OpDeleteAll:
			changes = append(changes, decoded{all: true})
		default:
			return fmt.Errorf("apply position %d: unknown op %v", pos, op.Kind)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.overlay) > 0 {
		// Only the log's writer has pending changes, and another writer's
		// batch can only follow the end of its term: its pending changes
		// will fail (fenced), and a cluster replica rebuilds this store
		// before it serves as current again.
		s.logger.Warn("applying another writer's batch while changes of this store's are pending: its term ended", "position", uint64(pos))
	}
	for _, c := range changes {
		if c.all {
			for gid := range s.groups {
				s.applyLocked(pos, gid, nil, nil)
			}
			continue
		}
		s.applyLocked(pos, c.gid, c.next, c.prepared)
	}
	if pos > s.applied {
		s.applied = pos
	}
	return nil
}

// applyLocked applies one committed change: group gid becomes next (nil
// removes it). It is the one conflict rule of every path that takes
// committed changes from a log (restore, load, follow): the writer checked
// each change against the same rules before committing it, so a change the
// index refuses here is a bug or was written by an older version; it is
// applied anyway, counted (ApplyConflicts) and logged. Skipping it instead
// would make the outcome depend on the order changes arrive in (a load
// reads keys in key order, a follower in commit order), and replicas would
// differ. pos is the change's position, 0 when restoring. s.mu must be held.
func (s *Store) applyLocked(pos journal.Position, gid string, next *Group, prepared []admission.Family) {
	old := s.groups[gid]
	if next == nil {
		if old != nil {
			s.install(gid, old, nil)
		}
		return
	}
	if err := s.index.check(gid, familiesOf(old), next.families, prepared, s.ownerName); err != nil {
		s.applyConflicts++
		s.logger.Error("applying a committed change that conflicts with the store: applied anyway so that every store holding this log is equal",
			"position", uint64(pos), "group", next.key.String(), "err", err)
	}
	s.install(gid, old, next)
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
