package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/journal"
)

// slotOf returns the slot of family name of the group with key k in the
// store's scrape order, or nil.
func slotOf(s *Store, k groupkey.Key, name string) *slot {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries.Get(probe(name, k.ID()))
	if !ok {
		return nil
	}
	return e.slot
}

// gValue scrapes s and returns the value of gauge g of job j.
func gValue(t *testing.T, s *Store) float64 {
	t.Helper()
	_, fams := scrape(t, s)
	v, ok := storetest.Value(fams, "g", map[string]string{"job": "j", "instance": ""})
	if !ok {
		t.Fatal("g of job j is not scraped")
	}
	return v
}

func TestSameSeriesPushesUpdateTheSlotInPlaceOnlyWithNoSnapshotOpen(t *testing.T) {
	s := New(Options{})
	k := storetest.Key("job", "j")
	mustPush(t, s, k, Replace, "g 1\n", t0)
	first := slotOf(s, k, "g")

	mustPush(t, s, k, Replace, "g 2\n", t0.Add(time.Second))
	if got := slotOf(s, k, "g"); got != first || first.fam != s.Group(k).families.get("g") {
		t.Fatal("a same-series push with no snapshot open did not update its slot in place")
	}

	// A push while a snapshot is open leaves the slot as the snapshot saw
	// it, and defers the update.
	open := s.Snapshot()
	before := textScrape(t, s.Snapshot())
	mustPush(t, s, k, Replace, "g 3\n", t0.Add(2*time.Second))
	if got := slotOf(s, k, "g"); got != first || first.fam == s.Group(k).families.get("g") {
		t.Fatal("a push while a snapshot is open changed the slot the snapshot reads")
	}
	// A snapshot taken now must show it: the update moves into a new slot.
	if v := gValue(t, s); v != 3 {
		t.Fatalf("a snapshot taken after the push shows g = %v, want 3", v)
	}
	second := slotOf(s, k, "g")
	if second == first || first.live() {
		t.Fatal("the update did not move into a new slot while the first snapshot was open")
	}
	if got := textScrape(t, open); got != before {
		t.Fatalf("an open snapshot saw a later push:\n%s\nwant\n%s", got, before)
	}

	// With every snapshot released, pushes update in place again, and an
	// update deferred while a snapshot was open is applied at its release.
	mustPush(t, s, k, Replace, "g 4\n", t0.Add(3*time.Second))
	if got := slotOf(s, k, "g"); got != second || gValue(t, s) != 4 {
		t.Error("with every snapshot released, a same-series push replaced the slot")
	}
	open = s.Snapshot()
	mustPush(t, s, k, Replace, "g 5\n", t0.Add(4*time.Second))
	open.Release()
	if got := slotOf(s, k, "g"); got != second || got.fam != s.Group(k).families.get("g") {
		t.Error("the update deferred while a snapshot was open was not applied in place at its release")
	}
	if v := gValue(t, s); v != 5 {
		t.Errorf("g = %v after the snapshot was released, want 5", v)
	}

	mustPush(t, s, k, Replace, "g{x=\"new\"} 6\n", t0.Add(5*time.Second))
	if got := slotOf(s, k, "g"); got == second || second.live() {
		t.Error("a push with other series kept the old slot")
	}
}

// groupMapScrape is the scrape a store's slots must give, rendered from its
// group map through a fresh store (uncachedScrape), independently of them.
func groupMapScrape(t *testing.T, s *Store) string {
	t.Helper()
	return string(uncachedScrape(t, s, exposition.NewFormat(exposition.EncodingText)))
}

func TestSnapshotsSeeExactlyTheStateAtTheirStart(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			s := New(Options{})
			type opened struct {
				sn   *Snapshot
				want string
			}
			var snaps []opened
			at := t0
			for step := range 300 {
				at = at.Add(time.Second)
				k := storetest.Key("job", "j", "instance", fmt.Sprint(rng.IntN(5)))
				switch op := rng.IntN(10); {
				case op < 5:
					// Same series, new values: the in-place path when no
					// snapshot is open.
					body := fmt.Sprintf("a %d\n# TYPE b counter\nb_total{x=\"1\"} %d\nc %d\n", step, step, rng.IntN(3))
					mustPush(t, s, k, Replace, body, at)
				case op < 6:
					mustPush(t, s, k, Merge, fmt.Sprintf("c{y=\"%d\"} %d\n", rng.IntN(2), step), at)
				case op < 7:
					if _, err := s.Delete(context.Background(), k); err != nil {
						t.Fatal(err)
					}
				case op < 9 && len(snaps) < 3:
					sn := s.Snapshot()
					want := textScrape(t, s.Snapshot())
					if oracle := groupMapScrape(t, s); want != oracle {
						t.Fatalf("step %d: the scrape differs from the group map:\n%s\nwant\n%s", step, want, oracle)
					}
					snaps = append(snaps, opened{sn: sn, want: want})
				case len(snaps) > 0:
					i := rng.IntN(len(snaps))
					if got := textScrape(t, snaps[i].sn); got != snaps[i].want {
						t.Fatalf("step %d: a snapshot changed after it was taken:\n%s\nwant\n%s", step, got, snaps[i].want)
					}
					snaps = append(snaps[:i], snaps[i+1:]...)
					if len(snaps) == 0 {
						if got, oracle := textScrape(t, s.Snapshot()), groupMapScrape(t, s); got != oracle {
							t.Fatalf("step %d: after the last release the scrape differs from the group map:\n%s\nwant\n%s", step, got, oracle)
						}
					}
				}
			}
			for _, o := range snaps {
				if got := textScrape(t, o.sn); got != o.want {
					t.Fatalf("a snapshot changed after it was taken:\n%s\nwant\n%s", got, o.want)
				}
			}
			s.mu.Lock()
			open := s.snapshots
			s.mu.Unlock()
			if open != 0 {
				t.Errorf("%d snapshots counted open after all were released", open)
			}
		})
	}
}

// refusingJournal refuses every append.
type refusingJournal struct{}

var errJournalRefused = errors.New("journal refused by test")

func (refusingJournal) Append(...journal.Op) (journal.Commit, error) {
	return nil, errJournalRefused
}

func TestARefusedChangeLeavesTheScrapeAsItWas(t *testing.T) {
	for _, withSnapshot := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshot open %v", withSnapshot), func(t *testing.T) {
			s := New(Options{})
			k := storetest.Key("job", "j")
			mustPush(t, s, k, Replace, "g 1\nh 1\n", t0)
			before := textScrape(t, s.Snapshot())
			if withSnapshot {
				sn := s.Snapshot()
				defer sn.Release()
			}
			s.SetJournal(refusingJournal{})
			var perr *PersistenceError
			if err := push(t, s, k, Replace, "g 2\nh 2\n", t0.Add(time.Second)); !errors.As(err, &perr) {
				t.Fatalf("push = %v, want a *PersistenceError", err)
			}
			if got := textScrape(t, s.Snapshot()); got != before {
				t.Fatalf("a refused push changed the scrape:\n%s\nwant\n%s", got, before)
			}
			s.SetJournal(nil)
			mustPush(t, s, k, Replace, "g 3\nh 3\n", t0.Add(2*time.Second))
			_, fams := scrape(t, s)
			if v, ok := storetest.Value(fams, "g", map[string]string{"job": "j", "instance": ""}); !ok || v != 3 {
				t.Fatalf("g = %v after a refused push and an accepted one, want 3", v)
			}
		})
	}
}

func TestADroppedSnapshotIsReleasedWhenCollected(t *testing.T) {
	s := New(Options{})
	mustPush(t, s, storetest.Key("job", "j"), Replace, "g 1\n", t0)
	func() { _ = s.Snapshot() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		s.mu.Lock()
		open := s.snapshots
		s.mu.Unlock()
		if open == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a snapshot dropped without Release still counts as open")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestAscendFromResumesAfterAnEntryAndPublishedCountsChanges checks the two
// things a background reader of the scrape order relies on: AscendFrom
// starts at the given entry (or the next one if it is gone) and says
// whether it was stopped, and Published moves with every served change
// and only then.
func TestAscendFromResumesAfterAnEntryAndPublishedCountsChanges(t *testing.T) {
	s := New(Options{})
	at := time.Unix(1_700_000_000, 0)
	a, b := groupkey.New(map[string]string{"job": "a"}), groupkey.New(map[string]string{"job": "b"})
	before := s.Published()
	mustPush(t, s, a, Replace, "m_total 1\n", at)
	mustPush(t, s, b, Replace, "m_total 2\n", at)
	if got := s.Published(); got != before+2 {
		t.Fatalf("Published after two pushes = %d, want %d", got, before+2)
	}
	sn := s.Snapshot()
	defer sn.Release()
	var from []string
	stopped := sn.AscendFrom("m_total", b.ID(), func(e Entry) bool {
		from = append(from, e.Name()+"/"+e.GroupID())
		return true
	})
	if stopped || len(from) == 0 || from[0] != "m_total/"+b.ID() {
		t.Fatalf("AscendFrom(m_total, b) visited %q (stopped %v), want b's m_total first and to the end", from, stopped)
	}
	if !sn.AscendFrom("", "", func(Entry) bool { return false }) {
		t.Error("AscendFrom did not report that fn stopped it")
	}
	n := s.Published()
	if _, err := s.Delete(context.Background(), groupkey.New(map[string]string{"job": "absent"})); err != nil {
		t.Fatal(err)
	}
	if s.Published() != n {
		t.Error("deleting an absent group counted as a change")
	}
	if _, err := s.Delete(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if s.Published() == n {
		t.Error("deleting a group did not count as a change")
	}
}

// TestASlotFitsThe32ByteSizeClass guards the scrape-order slot's size: there
// is one per family, and the next size class costs 16 bytes a slot.
func TestASlotFitsThe32ByteSizeClass(t *testing.T) {
	if size := unsafe.Sizeof(slot{}); size > 32 {
		t.Fatalf("a slot takes %d bytes, more than the 32-byte size class", size)
	}
}

func TestASlotKeepsItsKeysWhenRetired(t *testing.T) {
	long := strings.Repeat("g", 1000)
	for _, keys := range [][2]string{{"m", "g"}, {"", ""}, {"push_time_seconds", long}} {
		sl := newSlot(keys[0], keys[1], nil)
		if !sl.live() || sl.name() != keys[0] || sl.gid() != keys[1] {
			t.Fatalf("new slot %q/%q: live %v, keys %q/%q", keys[0], keys[1], sl.live(), sl.name(), sl.gid())
		}
		var s Store
		s.retire(sl)
		if sl.live() || sl.name() != keys[0] || sl.gid() != keys[1] {
			t.Fatalf("retired slot %q/%q: live %v, keys %q/%q", keys[0], keys[1], sl.live(), sl.name(), sl.gid())
		}
	}
}

// TestAScrapeReadsSlotsThatPushesRetire reads the keys of an open
// snapshot's slots while pushes and deletes retire them: under the race
// detector it fails if retiring a slot writes what reading its keys reads
// without synchronization.
func TestAScrapeReadsSlotsThatPushesRetire(t *testing.T) {
	s := New(Options{})
	ctx := context.Background()
	keys := make([]groupkey.Key, 8)
	for i := range keys {
		keys[i] = groupkey.New(map[string]string{"job": "j", "instance": fmt.Sprint(i)})
		if _, err := s.Push(ctx, Push{Key: keys[i], Method: Replace, Families: payload.Families(i, 0), Time: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	sn := s.Snapshot()
	defer sn.Release()
	done := make(chan int)
	go func() {
		n := 0
		for range 50 {
			sn.Ascend(func(e Entry) bool {
				n += len(e.Name()) + len(e.GroupID())
				return true
			})
		}
		done <- n
	}()
	for i, k := range keys {
		if i%2 == 0 {
			if _, err := s.Delete(ctx, k); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := s.Push(ctx, Push{Key: k, Method: Replace, Families: payload.Families(i, 1)[:2], Time: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if n := <-done; n == 0 {
		t.Fatal("the snapshot showed no entries")
	}
}
