package store

import (
	"runtime"
	"sync/atomic"

	"github.com/google/btree"

	"github.com/pushgate/pushgate/exposition"
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

// StartScrape records that a scrape in enc of the snapshot starts, so that
// later pushes render their text bodies in enc (DESIGN §6; protobuf scrapes
// change nothing there), and reports whether the scrape must drop the
// families' cached protobuf bytes as it passes them
// (Family.DropProtobufBody): a text scrape after a protobuf one.
func (sn *Snapshot) StartScrape(enc exposition.Encoding) (dropProtobuf bool) {
	return sn.store.render.scraped(enc)
}

// Ascend calls fn with every entry of the snapshot in scrape order (by
// metric name, then by group ID) until fn returns false.
func (sn *Snapshot) Ascend(fn func(Entry) bool) {
	sn.entries.Ascend(fn)
}

// HasFamily reports whether some group of the snapshot holds a family
// named name.
func (sn *Snapshot) HasFamily(name string) bool {
	found := false
	sn.entries.AscendGreaterOrEqual(Entry{name: name}, func(e Entry) bool {
		found = e.name == name
		return false
	})
	return found
}

// ReportSkipped counts n families a scrape in f left out because they could
// not be rendered in f (Store.SkippedFamilies), and logs it in one line
// with the first one's error.
func (sn *Snapshot) ReportSkipped(f exposition.Format, n int, first error) {
	if n == 0 {
		return
	}
	st := sn.store
	st.skippedFamilies.Add(uint64(n))
	st.logger.Error("families left out of a scrape: they cannot be rendered in its format",
		"format", f.ContentType(), "families", n, "first_err", first)
}
