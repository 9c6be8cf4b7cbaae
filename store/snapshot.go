package store

import (
	"runtime"
	"sync/atomic"

	"github.com/google/btree"

	"github.com/pushgate/pushgate/render"
)

// Snapshot is a consistent, point-in-time view of the store for one scrape.
// Taking it costs O(1) under the store's lock (a copy-on-write clone of the
// scrape order), so pushes never wait behind a scrape.
type Snapshot struct {
	store    *Store
	entries  *btree.BTreeG[Entry]
	released atomic.Bool
	cleanup  runtime.Cleanup
}

// Snapshot returns a view of the store as it is now. Release it when done:
// while a snapshot is open, pushes defer their slot updates (see
// Store.deferred), and a snapshot taken meanwhile has to move them into new
// slots.
func (s *Store) Snapshot() *Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Updates deferred for the open snapshots must show in this one.
	s.applyDeferred()
	s.snapshots++
	sn := &Snapshot{store: s, entries: s.entries.Clone()}
	// A snapshot dropped without Release is released when collected.
	sn.cleanup = runtime.AddCleanup(sn, (*Store).releaseSnapshot, s)
	return sn
}

// Release ends the snapshot; it must not be used after. Releasing twice is
// harmless.
func (sn *Snapshot) Release() {
	if sn.released.Swap(true) {
		return
	}
	sn.cleanup.Stop()
	sn.store.releaseSnapshot()
}

// releaseSnapshot counts a snapshot closed.
func (s *Store) releaseSnapshot() {
	s.mu.Lock()
	s.snapshots--
	if s.snapshots == 0 {
		s.applyDeferred()
	}
	s.mu.Unlock()
}

// RenderState returns what the snapshot's store shares with its scrapes
// about rendering: a scrape records its encoding there as it starts
// (render.State.StartScrape) and the families it left out as it ends.
func (sn *Snapshot) RenderState() *render.State { return &sn.store.render.State }

// Ascend calls fn with every entry of the snapshot in scrape order (by
// metric name, then by group ID) until fn returns false.
func (sn *Snapshot) Ascend(fn func(Entry) bool) {
	sn.entries.Ascend(fn)
}

// AscendFrom calls fn with the entries of the snapshot in scrape order,
// from the first that is not before name and gid (the entry of that name
// and group, if there is one), until fn returns false. It reports whether
// fn returned false.
func (sn *Snapshot) AscendFrom(name, gid string, fn func(Entry) bool) (stopped bool) {
	sn.entries.AscendGreaterOrEqual(probe(name, gid), func(e Entry) bool {
		stopped = !fn(e)
		return !stopped
	})
	return stopped
}

// HasFamily reports whether some group of the snapshot holds a family
// named name.
func (sn *Snapshot) HasFamily(name string) bool {
	found := false
	sn.entries.AscendGreaterOrEqual(probe(name, ""), func(e Entry) bool {
		found = e.Name() == name
		return false
	})
	return found
}
