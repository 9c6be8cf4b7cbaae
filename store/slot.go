package store

import (
	"sync/atomic"
	"unsafe"
)

// Entry is one family of one group in the scrape order: by metric name, then
// by group ID. It is one pointer, to the slot that holds both keys. With
// the keys inline (40 bytes) the B-tree held 8.2 MB at 10,000 bench groups
// (100,000 entries): fills insert nearly in order, which leaves its nodes
// about half full. With the keys in the slot (16 -> 48 bytes),
// BenchmarkStoreHeap went from 84.8 to 81.2 MB, and BenchmarkScrape and
// BenchmarkRestore (a B-tree insert per family) did not change beyond the
// noise (8 and 6 alternating runs).
type Entry struct {
	slot *slot
}

// Name returns the entry's metric family name.
func (e Entry) Name() string { return e.slot.name() }

// GroupID returns the ID of the entry's group (groupkey.Key.ID).
func (e Entry) GroupID() string { return e.slot.gid() }

// Family returns the family the entry shows.
func (e Entry) Family() *Family { return e.slot.fam }

// slot holds what a scrape reads of one family of one group. A push that
// replaces a family by one of the same series, while no snapshot is open,
// updates the family's slot in place instead of replacing the scrape-order
// entry: descending the B-tree for that was 13% of a push's CPU at 100,000
// groups (900,000 entries, every string compare a cache miss). While a
// snapshot is open the update is deferred (Store.deferred), and a snapshot
// taken before it is applied gets it through a new slot in a new entry,
// which the open snapshots' copy-on-write clones do not see: a scrape never
// sees a change made after it started.
//
// The two keys are held as the data pointer and length of each string, and
// whether the slot is live as a bit of one length: a slot is 32 bytes, where
// two string headers and a bool took it to the 48-byte size class. There is
// a slot per family (100,000 at 10,000 groups of the bench payload), so
// that is 1.6 MB: BenchmarkStoreHeap 76.7 to 75.1 MB. The keys are not
// interned (unique.Handle, 8 bytes each) because a B-tree compare would
// then follow one more pointer per key.
type slot struct {
	namePtr, gidPtr *byte
	nameLen         uint32
	// gidLen is the group ID's length, with slotRetired set once the slot
	// left the scrape order: its family was removed, or replaced through a
	// new slot. The bit is set under the store's lock while scrapes of
	// open snapshots read the length without it, so both go through an
	// atomic (a plain load on amd64 and arm64).
	gidLen atomic.Uint32
	fam    *Family
}

// slotRetired is the bit of slot.gidLen that marks a retired slot. Keys are
// far shorter than 2 GiB: a group ID is bounded by the request path, and a
// name by the push body.
const slotRetired = 1 << 31

// name returns the slot's metric family name; it never changes.
func (sl *slot) name() string { return unsafe.String(sl.namePtr, sl.nameLen) }

// gid returns the ID of the slot's group; it never changes.
func (sl *slot) gid() string { return unsafe.String(sl.gidPtr, sl.gidLen.Load()&^slotRetired) }

// live reports whether the slot is in the scrape order.
func (sl *slot) live() bool { return sl.gidLen.Load()&slotRetired == 0 }

// deferredUpdate is a family waiting to be shown by a slot, and the group
// it belongs to.
type deferredUpdate struct {
	fam *Family
	gid string
}

// newSlot returns a live slot holding f, family name of group gid.
func newSlot(name, gid string, f *Family) *slot {
	sl := &slot{namePtr: unsafe.StringData(name), nameLen: uint32(len(name)), gidPtr: unsafe.StringData(gid), fam: f}
	sl.gidLen.Store(uint32(len(gid)))
	return sl
}

// probe returns the key of the entry of family name of group gid, for a
// search: an entry whose slot holds no family.
func probe(name, gid string) Entry {
	return Entry{newSlot(name, gid, nil)}
}

// entryLess orders entries by metric name, then by group ID.
func entryLess(a, b Entry) bool {
	if an, bn := a.slot.name(), b.slot.name(); an != bn {
		return an < bn
	}
	return a.slot.gid() < b.slot.gid()
}

// install replaces group gid's state old by next (nil: absent) in both the
// head and the served state: what applying a committed change does. s.mu
// must be held, and gid must have no pending change.
func (s *Store) install(gid string, old, next *Group) {
	s.reindex(gid, old, next)
	s.publish(gid, old, next)
}

// reindex replaces group gid's head state old by next (nil: absent) in the
// consistency index, keeping the head's group and series totals. Families
// shared by old and next are left alone, so the cost is that of the change.
// s.mu must be held.
//
// A family replaced by one of the same name, type and series (a batch job
// pushing new values for the same labels, the common case) keeps its index
// entries as they are: removing and re-adding 74 series was a quarter of
// the push's time under the lock, and more at 100,000 groups, where every
// one of those map operations misses the CPU cache.
func (s *Store) reindex(gid string, old, next *Group) {
	switch {
	case old == nil && next != nil:
		s.headGroups++
	case old != nil && next == nil:
		s.headGroups--
	}
	var buf [16]*Family
	if old != nil {
		var nextFams familySet
		if next != nil {
			nextFams = next.families
		}
		for i, nf := range counterparts(old.families, nextFams, buf[:]) {
			f := old.families[i]
			if nf == f || (nf != nil && f.hasSeries(nf.Type(), nf.series(), nf.labelNames())) {
				continue
			}
			s.series -= f.SeriesCount()
			s.index.remove(gid, f)
		}
	}
	if next == nil {
		return
	}
	var oldFams familySet
	if old != nil {
		oldFams = old.families
	}
	for i, of := range counterparts(next.families, oldFams, buf[:]) {
		f := next.families[i]
		if of == f || (of != nil && of.hasSeries(f.Type(), f.series(), f.labelNames())) {
			continue
		}
		s.series += f.SeriesCount()
		s.index.add(gid, f)
	}
}

// publish replaces group gid's served state old by next (nil: absent) in
// the group map and the scrape order. s.mu must be held.
//
// A family replaced by one of the same series keeps its slot (updated now,
// or when the open snapshots are released) instead of replacing the B-tree
// entry, for the same reason as in reindex.
func (s *Store) publish(gid string, old, next *Group) {
	if old == nil && next == nil {
		return
	}
	s.published.Add(1)
	var buf [16]*Family
	var oldFams, nextFams familySet
	if old != nil {
		oldFams = old.families
	}
	if next != nil {
		nextFams = next.families
	}
	if old != nil {
		for i, nf := range counterparts(oldFams, nextFams, buf[:]) {
			if nf != nil {
				continue
			}
			name := oldFams[i].Name()
			if gone, ok := s.entries.Delete(probe(name, gid)); ok {
				s.retire(gone.slot)
			}
		}
	}
	if next == nil {
		delete(s.groups, gid)
		return
	}
	for i, of := range counterparts(nextFams, oldFams, buf[:]) {
		f := next.families[i]
		name := f.Name()
		if of == f {
			continue
		}
		same := of != nil && of.hasSeries(f.Type(), f.series(), f.labelNames())
		if same && of.slot != nil && of.slot.live() && s.shownBy(of.slot) == of {
			sl := of.slot
			f.slot = sl
			if s.snapshots == 0 {
				sl.fam = f
				continue
			}
			if s.deferred == nil {
				s.deferred = make(map[*slot]deferredUpdate)
			}
			s.deferred[sl] = deferredUpdate{fam: f, gid: gid}
			continue
		}
		s.replaceSlot(name, gid, f)
	}
	s.groups[gid] = next
}

// shownBy returns the family sl shows, or will show once its deferred
// update is applied. s.mu must be held.
func (s *Store) shownBy(sl *slot) *Family {
	if d, ok := s.deferred[sl]; ok {
		return d.fam
	}
	return sl.fam
}

// replaceSlot puts f into a new slot of the scrape order, replacing the
// entry of its name and group if there is one. s.mu must be held.
func (s *Store) replaceSlot(name, gid string, f *Family) {
	f.slot = newSlot(name, gid, f)
	if prev, ok := s.entries.ReplaceOrInsert(Entry{f.slot}); ok {
		s.retire(prev.slot)
	}
}

// retire marks a slot that left the scrape order, and forgets its deferred
// update. s.mu must be held.
func (s *Store) retire(sl *slot) {
	sl.gidLen.Or(slotRetired)
	delete(s.deferred, sl)
}

// applyDeferred applies the deferred slot updates: in place when no
// snapshot is open, else through new slots, so that the open snapshots keep
// what they saw. s.mu must be held.
func (s *Store) applyDeferred() {
	for sl, d := range s.deferred {
		switch {
		case !sl.live():
		case s.snapshots == 0:
			sl.fam = d.fam
		default:
			// replaceSlot retires sl, deleting it from the map being
			// ranged over, which Go allows.
			s.replaceSlot(d.fam.Name(), d.gid, d.fam)
		}
	}
	clear(s.deferred)
}
