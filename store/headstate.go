package store

import (
	"errors"

	"github.com/pushgate/pushgate/groupkey"
)

// A family may carry a state: opaque bytes that whoever pushed the family
// keeps beside it (the OTLP ingest keeps there the delta windows it summed
// into the family's values). The store does not read them; it keeps them
// with the family, so they live exactly as long as the family does: kept
// across merge pushes of other families, dropped when a push replaces the
// family without a state, a PUT replaces the group or the group is deleted,
// and journaled and replicated with the group.
//
// A writer that computes a family from its state reads the head with
// HeadStates and pushes with Push.Expect set to the Head it read: the push
// fails with ErrHeadChanged when the group changed in between, so two
// writers cannot both build on the same state and one of them lose the
// other's change.

// ErrHeadChanged is returned by a push whose Expect no longer holds: the
// group changed since its head was read. Nothing was changed; read again
// and retry.
var ErrHeadChanged = errors.New("the group changed since its state was read")

// Head identifies one state of one group in the head (committed and
// pending changes) of one store: a push expecting it applies only while the
// group is still in that state.
type Head struct {
	store *Store
	// g is the head's group as read (nil: absent). Groups are immutable and
	// every change installs a new one, so pointer equality is identity;
	// holding it keeps its address from being reused.
	g *Group
}

// HeadStates returns the states of group key's families as the head holds
// them (nil when the group is absent or no family has a state), and the
// Head to expect when pushing what was computed from them. The returned
// slices must not be modified.
func (s *Store) HeadStates(key groupkey.Key) (map[string][]byte, Head) {
	s.mu.Lock()
	g := s.headGroup(key.ID())
	s.mu.Unlock()
	h := Head{store: s, g: g}
	if g == nil {
		return nil, h
	}
	var states map[string][]byte
	for _, f := range g.families {
		st := f.State()
		if st == nil {
			continue
		}
		if states == nil {
			states = make(map[string][]byte)
		}
		states[f.Name()] = st
	}
	return states, h
}

// holds reports whether the head of s still holds h's group for gid. s.mu
// must be held.
func (h *Head) holds(s *Store, gid string) bool {
	return h.store == s && s.headGroup(gid) == h.g
}

// State returns the state the push that stored the family gave it, or nil.
// The bytes must not be modified.
func (f *Family) State() []byte {
	if f.extra == nil {
		return nil
	}
	return f.extra.state
}
