package store

import "math/bits"

// seriesOwners maps the hash of every stored series of one metric name to
// the number of the group that holds it (nameEntry.series). It is the
// index's largest structure (440,000 entries under 10 names at 10,000
// groups of the bench payload), so it is a table of its own rather than a
// Go map: a swiss-table slot for a uint64 key and a uint32 value is padded
// to 16 bytes plus a control byte, and a large map's tables run between
// 44% and 87.5% full (split at 1,024 slots), ~35 bytes an entry as
// measured below; here a slot is 12 bytes (two parallel arrays, no
// padding) and a table runs between 57% and 85% full (70.5% over the
// filled store: 7.5 MB for the 440,000 entries, 17 bytes an entry).
//
// What it saves: BenchmarkStoreHeap's heap-MB went from 98.4-98.6 to 90.5
// (-8.0 MB, 3 runs each), scraped-heap-MB from 108.1 to 100.1. What it
// costs: nothing measurable on a push. BenchmarkApply (groups=10000) and
// web's BenchmarkPush do not change beyond this machine's noise (two sets
// of 10 and 12 alternating runs, benchstat p ≥ 0.24); a re-push of the
// same label sets does not touch the table at all (see Store.reindex).
// Restoring 10,000 groups into an empty store, which fills the tables, is
// within noise too (BenchmarkRestore, 1.01 s to 0.95 s, p=0.28) and
// allocates 3.9% fewer bytes (197 to 189 MiB). On the table's own
// operations (BenchmarkSeriesOwners, 10 runs, against the map it
// replaced): a lookup that finds its key is 1.7× faster at 44,000 entries
// and 2.3× at 1,000,000 (12 bytes a slot, and the keys of a probe run are
// adjacent), filling a table from empty is 2.1-2.3× faster, and a lookup
// that misses and a delete plus re-insert are within noise.
//
// It is open addressing with linear probing. The keys are maphash values
// under the store's random seed, uniformly distributed and unknown to a
// pusher, so they are used as they are, with no mixing, and a slot is
// chosen from the high bits of the product of the key and the number of
// slots (multiply-shift range reduction): the capacity need not be a power
// of two, so the table grows by 1.5× instead of 2× and wastes less at its
// least full. Deletion shifts the following entries of the probe run back
// instead of leaving tombstones, so lookups never walk over dead slots and
// the table shrinks when most of its entries are gone (a store whose
// groups are deleted gives the memory back; a Go map never shrinks).
//
// Neither array holds a pointer, so the garbage collector never scans them
// (see nameEntry.series).
type seriesOwners struct {
	// keys[i] is owned by owners[i]; a zero key marks an empty slot.
	keys   []uint64
	owners []groupNum
	// used counts the non-empty slots.
	used int
	// The hash 0 cannot sit in keys, where 0 means empty: its owner is
	// kept here.
	hasZero   bool
	zeroOwner groupNum
}

const (
	// ownersMinSlots is the smallest table that is allocated.
	ownersMinSlots = 8
	// A table grows by 3/2 once an insert would fill more than 85% of its
	// slots: linear probing with uniform keys then takes ~3.8 probes for a
	// hit and ~23 sequential keys (three cache lines) for a miss at the
	// worst, and ~1.7 and ~3.2 just after growing (57% full).
	ownersMaxLoadPct = 85
	// A table of more than ownersShrinkSlots slots shrinks to half full once
	// fewer than a quarter of its slots are used: the gap between the two
	// thresholds keeps a table whose size hovers around one from being
	// rebuilt on every change, and small tables are not worth rebuilding.
	ownersShrinkSlots = 64
)

// makeSeriesOwners returns a table that holds hint entries without growing.
func makeSeriesOwners(hint int) seriesOwners {
	var t seriesOwners
	if hint > 0 {
		t.alloc(slotsFor(hint))
	}
	return t
}

// slotsFor returns the number of slots that holds n entries within the
// maximum load.
func slotsFor(n int) int {
	return max(ownersMinSlots, n*100/ownersMaxLoadPct+1)
}

// home returns the slot where the probe for h starts: the high word of
// h × len(keys), which maps uniform keys uniformly onto any number of
// slots.
func (t *seriesOwners) home(h uint64) int {
	hi, _ := bits.Mul64(h, uint64(len(t.keys)))
	return int(hi)
}

// find returns the slot holding h, or the empty slot ending its probe run
// and false. The table must have slots; it always has an empty one.
func (t *seriesOwners) find(h uint64) (int, bool) {
	i := t.home(h)
	for {
		switch t.keys[i] {
		case h:
			return i, true
		case 0:
			return i, false
		}
		if i++; i == len(t.keys) {
			i = 0
		}
	}
}

// get returns the owner of h, and whether the table holds h.
func (t *seriesOwners) get(h uint64) (groupNum, bool) {
	if h == 0 {
		return t.zeroOwner, t.hasZero
	}
	if t.used == 0 {
		return 0, false
	}
	i, ok := t.find(h)
	if !ok {
		return 0, false
	}
	return t.owners[i], true
}

// set makes owner the owner of h.
func (t *seriesOwners) set(h uint64, owner groupNum) {
	if h == 0 {
		t.hasZero, t.zeroOwner = true, owner
		return
	}
	if len(t.keys) == 0 {
		t.alloc(ownersMinSlots)
	}
	i, ok := t.find(h)
	if ok {
		t.owners[i] = owner
		return
	}
	if (t.used+1)*100 > len(t.keys)*ownersMaxLoadPct {
		t.resize(max(len(t.keys)*3/2, slotsFor(t.used+1)))
		i, _ = t.find(h)
	}
	t.keys[i], t.owners[i] = h, owner
	t.used++
}

// delete removes h from the table.
func (t *seriesOwners) delete(h uint64) {
	if h == 0 {
		t.hasZero, t.zeroOwner = false, 0
		return
	}
	if t.used == 0 {
		return
	}
	i, ok := t.find(h)
	if !ok {
		return
	}
	// Backward shift: slot i is the hole. Each later entry of the run moves
	// into it when the hole lies between the entry's home slot and its slot
	// (a lookup for it, starting at home, then meets it before any empty
	// slot); the hole moves to where it was. An empty slot ends the run.
	n := len(t.keys)
	for j := i; ; {
		if j++; j == n {
			j = 0
		}
		k := t.keys[j]
		if k == 0 {
			break
		}
		// Distances forward, around the end of the array, from the entry's
		// home to its slot and from the hole to its slot (without a
		// division: % made a delete 1.6× slower).
		fromHome, fromHole := j-t.home(k), j-i
		if fromHome < 0 {
			fromHome += n
		}
		if fromHole < 0 {
			fromHole += n
		}
		if fromHome >= fromHole {
			t.keys[i], t.owners[i] = k, t.owners[j]
			i = j
		}
	}
	t.keys[i], t.owners[i] = 0, 0
	t.used--
	if n > ownersShrinkSlots && t.used*4 < n {
		t.resize(max(ownersMinSlots, t.used*2))
	}
}

// alloc gives the table n empty slots.
func (t *seriesOwners) alloc(n int) {
	t.keys = make([]uint64, n)
	t.owners = make([]groupNum, n)
}

// resize moves the entries into a table of n slots.
func (t *seriesOwners) resize(n int) {
	keys, owners := t.keys, t.owners
	t.alloc(n)
	for i, k := range keys {
		if k != 0 {
			j, _ := t.find(k)
			t.keys[j], t.owners[j] = k, owners[i]
		}
	}
}
