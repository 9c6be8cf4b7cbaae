package store

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// requireOwnersValid checks t's structure: every entry is reached by a
// probe from its home slot before any empty slot, the count of used slots
// is right, and the table is within its maximum load.
func requireOwnersValid(tb testing.TB, t *seriesOwners) {
	tb.Helper()
	used := 0
	n := len(t.keys)
	for j, k := range t.keys {
		if k == 0 {
			if t.owners[j] != 0 {
				tb.Fatalf("empty slot %d keeps owner %d", j, t.owners[j])
			}
			continue
		}
		used++
		for i := t.home(k); i != j; i = (i + 1) % n {
			if t.keys[i] == 0 {
				tb.Fatalf("key %#x in slot %d is cut from its home slot %d by the empty slot %d", k, j, t.home(k), i)
			}
		}
	}
	if used != t.used {
		tb.Fatalf("%d slots used, the table counts %d", used, t.used)
	}
	if n > 0 && used*100 > n*ownersMaxLoadPct {
		tb.Fatalf("%d of %d slots used, over %d%%", used, n, ownersMaxLoadPct)
	}
}

// requireOwnersEqual checks that t holds exactly the entries of model.
func requireOwnersEqual(tb testing.TB, t *seriesOwners, model map[uint64]groupNum) {
	tb.Helper()
	requireOwnersValid(tb, t)
	if t.len() != len(model) {
		tb.Fatalf("table holds %d entries, the model %d", t.len(), len(model))
	}
	for k, want := range model {
		if got, ok := t.get(k); !ok || got != want {
			tb.Fatalf("get(%#x) = %d, %v; want %d, true", k, got, ok, want)
		}
	}
}

// keyAt returns a key whose probe starts at slot s of a table of 8 slots,
// the k-th such key (k ≥ 1).
func keyAt(s, k int) uint64 { return uint64(s)<<61 + uint64(k) }

func TestSeriesOwnersBehaveLikeAMapUnderRandomSetsGetsAndDeletes(t *testing.T) {
	for _, tt := range []struct {
		name string
		keys int // size of the key pool, 0 included
		ops  int
	}{
		{"a few keys, mostly overwrites", 20, 20_000},
		{"hundreds of keys", 500, 50_000},
		{"thousands of keys, growing and shrinking", 5_000, 100_000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(24, uint64(tt.keys)))
			pool := make([]uint64, tt.keys)
			for i := 1; i < len(pool); i++ {
				pool[i] = rng.Uint64()
			}
			tab := makeSeriesOwners(rng.IntN(8))
			model := map[uint64]groupNum{}
			grown, shrunk := false, false
			for op := range tt.ops {
				// Alternate phases that fill the table and that empty it,
				// so that it grows and shrinks.
				setShare := 70
				if (op/(tt.ops/8))%2 == 1 {
					setShare = 10
				}
				k := pool[rng.IntN(len(pool))]
				slots := len(tab.keys)
				switch r := rng.IntN(100); {
				case r < setShare:
					o := groupNum(rng.Uint32())
					tab.set(k, o)
					model[k] = o
				case r < setShare+15:
					got, ok := tab.get(k)
					want, wantOK := model[k]
					if ok != wantOK || got != want {
						t.Fatalf("op %d: get(%#x) = %d, %v; want %d, %v", op, k, got, ok, want, wantOK)
					}
				default:
					tab.delete(k)
					delete(model, k)
				}
				grown = grown || len(tab.keys) > slots && slots > 0
				shrunk = shrunk || len(tab.keys) < slots
				if op%1000 == 0 {
					requireOwnersEqual(t, &tab, model)
				}
			}
			requireOwnersEqual(t, &tab, model)
			if tt.keys >= 5_000 && !(grown && shrunk) {
				t.Fatalf("grown %v, shrunk %v: the sequence did not exercise both", grown, shrunk)
			}
		})
	}
}

func TestSeriesOwnersGrowByLessThanDoubleAndShrinkWhenEmptied(t *testing.T) {
	tab := makeSeriesOwners(0)
	if tab.keys != nil {
		t.Fatalf("an empty table holds %d slots", len(tab.keys))
	}
	const n = 100_000
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = rng.Uint64() | 1
		slots := len(tab.keys)
		tab.set(keys[i], groupNum(i))
		if len(tab.keys) != slots && slots > 0 && len(tab.keys) > slots*3/2+1 {
			t.Fatalf("grew from %d to %d slots", slots, len(tab.keys))
		}
	}
	requireOwnersValid(t, &tab)
	if load := float64(tab.used) / float64(len(tab.keys)); load < 0.5 {
		t.Fatalf("%d entries in %d slots: %.2f full", tab.used, len(tab.keys), load)
	}
	for i, k := range keys[:n-10] {
		tab.delete(k)
		if i%10_000 == 0 {
			requireOwnersValid(t, &tab)
		}
	}
	if len(tab.keys) > ownersShrinkSlots {
		t.Fatalf("10 entries left in %d slots", len(tab.keys))
	}
	model := map[uint64]groupNum{}
	for i := n - 10; i < n; i++ {
		model[keys[i]] = groupNum(i)
	}
	requireOwnersEqual(t, &tab, model)
}

func TestSeriesOwnersHoldTheKeyZeroApartFromTheEmptySlots(t *testing.T) {
	tab := makeSeriesOwners(4)
	if _, ok := tab.get(0); ok {
		t.Fatal("an empty table holds the key 0")
	}
	tab.set(0, 7)
	tab.set(keyAt(0, 1), 8)
	if o, ok := tab.get(0); !ok || o != 7 {
		t.Fatalf("get(0) = %d, %v; want 7, true", o, ok)
	}
	if tab.len() != 2 || tab.used != 1 {
		t.Fatalf("len %d, used slots %d; want 2 and 1", tab.len(), tab.used)
	}
	tab.set(0, 9)
	tab.delete(keyAt(0, 1))
	if o, ok := tab.get(0); !ok || o != 9 {
		t.Fatalf("after deleting another key, get(0) = %d, %v; want 9, true", o, ok)
	}
	tab.delete(0)
	if _, ok := tab.get(0); ok || tab.len() != 0 {
		t.Fatalf("after delete(0) the table still holds 0 (len %d)", tab.len())
	}
	tab.set(keyAt(3, 1), 1)
	tab.delete(0)
	if o, ok := tab.get(keyAt(3, 1)); !ok || o != 1 {
		t.Fatal("delete(0) removed another key")
	}
}

func TestSeriesOwnersProbeAroundTheEndOfTheArray(t *testing.T) {
	tab := makeSeriesOwners(1)
	if len(tab.keys) != 8 {
		t.Fatalf("%d slots, the keys below are made for 8", len(tab.keys))
	}
	// Three keys at home in the last slot fill it and wrap to slots 0 and
	// 1; a key at home in slot 0 then lands in slot 2.
	a, b, c, d := keyAt(7, 1), keyAt(7, 2), keyAt(7, 3), keyAt(0, 1)
	for i, k := range []uint64{a, b, c, d} {
		tab.set(k, groupNum(i+1))
	}
	for i, want := range []uint64{0: b, 1: c, 2: d, 7: a} {
		if want != 0 && tab.keys[i] != want {
			t.Fatalf("slot %d holds %#x, want %#x", i, tab.keys[i], want)
		}
	}
	// Deleting the first of the run shifts every later one back across
	// the end of the array, d to its home slot.
	tab.delete(a)
	requireOwnersEqual(t, &tab, map[uint64]groupNum{b: 2, c: 3, d: 4})
	if tab.keys[7] != b || tab.keys[0] != c || tab.keys[1] != d {
		t.Fatalf("slots 7, 0, 1 hold %#x, %#x, %#x; want b, c, d shifted back", tab.keys[7], tab.keys[0], tab.keys[1])
	}
	tab.delete(c)
	requireOwnersEqual(t, &tab, map[uint64]groupNum{b: 2, d: 4})
	if tab.keys[0] != d {
		t.Fatalf("slot 0 holds %#x, want d, at home", tab.keys[0])
	}
}

func TestSeriesOwnersDeletionKeepsEveryProbeRunWhole(t *testing.T) {
	// a and c start at slot 3, b at slot 4: a sits in 3, b in 4, c in 5.
	// Deleting a must move c into slot 3 and leave b in its home slot: a
	// deletion that only empties the slot cuts c from its home, and one
	// that shifts every entry back puts b before its home.
	tab := makeSeriesOwners(1)
	a, b, c := keyAt(3, 1), keyAt(4, 1), keyAt(3, 2)
	tab.set(a, 1)
	tab.set(b, 2)
	tab.set(c, 3)
	if tab.keys[3] != a || tab.keys[4] != b || tab.keys[5] != c {
		t.Fatalf("slots 3-5 hold %#x", tab.keys[3:6])
	}
	tab.delete(a)
	for k, want := range map[uint64]groupNum{b: 2, c: 3} {
		if o, ok := tab.get(k); !ok || o != want {
			t.Fatalf("after deleting a, get(%#x) = %d, %v; want %d, true", k, o, ok, want)
		}
	}
	if _, ok := tab.get(a); ok {
		t.Fatal("a is still found after its deletion")
	}
	requireOwnersValid(t, &tab)
	// Deleting a key the table does not hold changes nothing.
	tab.delete(keyAt(3, 9))
	requireOwnersEqual(t, &tab, map[uint64]groupNum{b: 2, c: 3})
}

// BenchmarkSeriesOwners compares the table with the Go map it replaced on
// the index's operations, at the entries of one metric name at 10,000
// groups of the bench payload (44,000) and at a size that misses the CPU
// caches: a lookup that finds its key (a push's check of changed series),
// one that does not (a new series), a delete and re-insert (a group whose
// series changed), and filling the table from empty.
func BenchmarkSeriesOwners(b *testing.B) {
	for _, n := range []int{44_000, 1_000_000} {
		rng := rand.New(rand.NewPCG(uint64(n), 0))
		keys := make([]uint64, n)
		misses := make([]uint64, n)
		for i := range keys {
			keys[i], misses[i] = rng.Uint64()|1, rng.Uint64()|1
		}
		tab := makeSeriesOwners(0)
		m := map[uint64]groupNum{}
		for i, k := range keys {
			tab.set(k, groupNum(i))
			m[k] = groupNum(i)
		}
		var sink groupNum
		b.Run(fmt.Sprintf("entries=%d/op=hit/table=owners", n), func(b *testing.B) {
			for i := range b.N {
				o, _ := tab.get(keys[i%n])
				sink += o
			}
		})
		b.Run(fmt.Sprintf("entries=%d/op=hit/table=map", n), func(b *testing.B) {
			for i := range b.N {
				sink += m[keys[i%n]]
			}
		})
		b.Run(fmt.Sprintf("entries=%d/op=miss/table=owners", n), func(b *testing.B) {
			for i := range b.N {
				o, _ := tab.get(misses[i%n])
				sink += o
			}
		})
		b.Run(fmt.Sprintf("entries=%d/op=miss/table=map", n), func(b *testing.B) {
			for i := range b.N {
				sink += m[misses[i%n]]
			}
		})
		b.Run(fmt.Sprintf("entries=%d/op=delete-set/table=owners", n), func(b *testing.B) {
			for i := range b.N {
				k := keys[i%n]
				if o, ok := tab.get(k); ok && o == groupNum(i%n) {
					tab.delete(k)
				}
				tab.set(k, groupNum(i%n))
			}
		})
		b.Run(fmt.Sprintf("entries=%d/op=delete-set/table=map", n), func(b *testing.B) {
			for i := range b.N {
				k := keys[i%n]
				if m[k] == groupNum(i%n) {
					delete(m, k)
				}
				m[k] = groupNum(i % n)
			}
		})
		b.Run(fmt.Sprintf("entries=%d/op=fill/table=owners", n), func(b *testing.B) {
			for range b.N {
				t := makeSeriesOwners(0)
				for i, k := range keys {
					t.set(k, groupNum(i))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
		})
		b.Run(fmt.Sprintf("entries=%d/op=fill/table=map", n), func(b *testing.B) {
			for range b.N {
				t := map[uint64]groupNum{}
				for i, k := range keys {
					t[k] = groupNum(i)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
		})
		runtime.KeepAlive(sink)
	}
}

// len returns the number of entries (tests only).
func (t *seriesOwners) len() int {
	if t.hasZero {
		return t.used + 1
	}
	return t.used
}
