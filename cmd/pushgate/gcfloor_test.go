package main

import (
	"log/slog"
	"runtime/debug"
	"testing"
)

func TestFloorPercent(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name      string
		live, min uint64
		base      int
		want      int
	}{
		{"a heap at the floor keeps the configured percent", 64 * mib, 64 * mib, 50, 50},
		{"a heap above the floor keeps the configured percent", 500 * mib, 64 * mib, 50, 50},
		{"a heap of a quarter of the floor may quadruple", 16 * mib, 64 * mib, 50, 300},
		{"a heap of an eighth of the floor may grow eightfold", 8 * mib, 64 * mib, 50, 700},
		{"a percent above what the floor needs is kept", 48 * mib, 64 * mib, 50, 50},
		{"an empty heap counts as one MiB", 0, 64 * mib, 50, 6300},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := floorPercent(tc.live, tc.min, tc.base); got != tc.want {
				t.Errorf("floorPercent(%d, %d, %d) = %d, want %d", tc.live, tc.min, tc.base, got, tc.want)
			}
		})
	}
}

// TestTheGCFloorSetsThePercentForTheLiveHeap changes the process-wide GC
// percent, so it restores it and does not run in parallel.
func TestTheGCFloorSetsThePercentForTheLiveHeap(t *testing.T) {
	prev := debug.SetGCPercent(50)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	f := &gcFloor{min: 64 << 20, base: 50, set: 50, logger: slog.New(slog.DiscardHandler)}
	f.adjustTo(8 << 20)
	if got := debug.SetGCPercent(-1); got != 700 {
		t.Errorf("with 8 MiB live, GC percent = %d, want 700", got)
	}
	debug.SetGCPercent(700)
	f.adjustTo(100 << 20)
	if got := debug.SetGCPercent(50); got != 50 {
		t.Errorf("with 100 MiB live, GC percent = %d, want the configured 50", got)
	}
}
