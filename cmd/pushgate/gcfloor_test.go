package main

import (
	"log/slog"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestFloorPercent(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name             string
		live, roots, min uint64
		base             int
		want             int
	}{
		{"a heap at the floor keeps the configured percent", 64 * mib, 0, 64 * mib, 50, 50},
		{"a heap above the floor keeps the configured percent", 500 * mib, 0, 64 * mib, 50, 50},
		{"a heap of a quarter of the floor may quadruple", 16 * mib, 0, 64 * mib, 50, 300},
		{"a heap of an eighth of the floor may grow eightfold", 8 * mib, 0, 64 * mib, 50, 700},
		{"a percent above what the floor needs is kept", 48 * mib, 0, 64 * mib, 50, 50},
		{"stacks and globals count as the runtime counts them", 8 * mib, 8 * mib, 64 * mib, 50, 350},
		// The runtime's goal is at least 4 MiB × percent/100: 1,600% makes
		// it 64 MiB. The old rule gave an empty heap 6,300% (a 252 MiB
		// goal) and a 2 MiB heap 3,100% (124 MiB).
		{"an empty heap gets the percent whose minimum goal is the floor", 0, 0, 64 * mib, 50, 1600},
		{"a tiny heap gets the same", 2 * mib, 0, 64 * mib, 50, 1600},
		{"a tiny floor keeps the configured percent", 0, 0, 1 * mib, 50, 50},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := floorPercent(tc.live, tc.roots, tc.min, tc.base); got != tc.want {
				t.Errorf("floorPercent(%d, %d, %d, %d) = %d, want %d", tc.live, tc.roots, tc.min, tc.base, got, tc.want)
			}
		})
	}
}

// runtimeGoal is the heap goal the Go runtime derives from a percent
// (gcControllerState.commit in runtime/mgcpacer.go).
func runtimeGoal(live, roots uint64, percent int) uint64 {
	return max(live+(live+roots)*uint64(percent)/100, runtimeHeapMinimum*uint64(percent)/100)
}

// TestTheFloorIsACeilingToo checks, for every live heap from empty to past
// the floor, that the goal the runtime makes of floorPercent's answer is
// the floor while the base percent would give less, and what the base
// percent gives otherwise: a small store's heap stops at the floor, and a
// store past it pays nothing. The rule before failed this at an empty heap,
// whose goal it made 252 MiB, and a 10,000-group fill grew into it.
func TestTheFloorIsACeilingToo(t *testing.T) {
	const mib = 1 << 20
	const base = 50
	for _, floor := range []uint64{16 * mib, 64 * mib, 256 * mib} {
		for _, roots := range []uint64{0, 512 << 10, 4 * mib} {
			for live := uint64(0); live <= floor*2; live += 256 << 10 {
				got := runtimeGoal(live, roots, floorPercent(live, roots, floor, base))
				want := max(floor, runtimeGoal(live, roots, base))
				// Integer percents round the goal down by at most 1% of
				// the heap scanned.
				if got > want || got+(live+roots)/100+1 < want {
					t.Fatalf("floor %d MiB, live %d, roots %d: goal %d, want %d", floor/mib, live, roots, got, want)
				}
			}
		}
	}
}

// TestTheGCFloorSetsThePercentForTheLiveHeap changes the process-wide GC
// percent, so it restores it and does not run in parallel.
func TestTheGCFloorSetsThePercentForTheLiveHeap(t *testing.T) {
	prev := debug.SetGCPercent(50)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	f := &gcFloor{min: 64 << 20, base: 50, set: 50, logger: slog.New(slog.DiscardHandler)}
	f.adjustTo(8<<20, 0)
	if got := debug.SetGCPercent(-1); got != 700 {
		t.Errorf("with 8 MiB live, GC percent = %d, want 700", got)
	}
	debug.SetGCPercent(700)
	f.adjustTo(100<<20, 0)
	if got := debug.SetGCPercent(50); got != 50 {
		t.Errorf("with 100 MiB live, GC percent = %d, want the configured 50", got)
	}
}

// TestTheRuntimeGoalIsTheFloor asks the runtime itself: after a collection
// of this test's small heap, the floor's percent makes the heap goal the
// floor, not more. It changes the process-wide GC percent, so it restores
// it and does not run in parallel.
func TestTheRuntimeGoalIsTheFloor(t *testing.T) {
	const floor = 64 << 20
	prev := debug.SetGCPercent(50)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	runtime.GC()
	f := &gcFloor{min: floor, base: 50, set: 50, logger: slog.New(slog.DiscardHandler),
		samples: []metrics.Sample{{Name: liveHeapMetric}, {Name: stackMetric}, {Name: globalsMetric}}}
	f.adjust()
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: liveHeapMetric}}
	metrics.Read(s)
	goal, live := s[0].Value.Uint64(), s[1].Value.Uint64()
	if live > floor/2 {
		t.Skipf("the test's live heap is %d bytes, too close to the floor", live)
	}
	if goal > floor || goal < floor*15/16 {
		t.Errorf("live heap %d bytes, GC percent %d: heap goal %d bytes, want %d or a little less", live, f.set, goal, floor)
	}
}
