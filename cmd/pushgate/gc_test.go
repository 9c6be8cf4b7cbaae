package main

import (
	"log/slog"
	"math"
	"runtime/debug"
	"testing"
)

// TestGCSettings checks which of flag, environment and default decides the
// collector's parameters. It changes process-wide settings, so it restores
// them and does not run in parallel.
func TestGCSettings(t *testing.T) {
	prevPercent := debug.SetGCPercent(100)
	prevLimit := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
	})
	cases := []struct {
		name        string
		args        []string
		gogc, limit string // environment
		wantPercent int
		wantLimit   int64
	}{
		{"the defaults apply without flags or environment", nil, "", "", defaultGCPercent, math.MaxInt64},
		{"GOGC in the environment beats the default", nil, "77", "", 100, math.MaxInt64},
		{"the flag beats GOGC in the environment", []string{"--store.gc-percent=30"}, "77", "", 30, math.MaxInt64},
		{"a memory limit flag sets the limit", []string{"--store.memory-limit=256MiB"}, "", "", defaultGCPercent, 256 << 20},
		{"GOMEMLIMIT in the environment beats the default", nil, "", "1GiB", defaultGCPercent, 12345},
		{"the memory limit flag beats GOMEMLIMIT", []string{"--store.memory-limit=64MiB"}, "", "1GiB", defaultGCPercent, 64 << 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			t.Setenv("GOMEMLIMIT", tc.limit)
			// Stand-ins for what the runtime read from the environment at
			// start: 100 and a marker limit, which must stay untouched when
			// the environment decides.
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(12345)
			c, err := parseFlags(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.gc.apply(slog.New(slog.DiscardHandler)); err != nil {
				t.Fatal(err)
			}
			if got := debug.SetGCPercent(100); got != tc.wantPercent {
				t.Errorf("GC percent = %d, want %d", got, tc.wantPercent)
			}
			if got := debug.SetMemoryLimit(-1); got != tc.wantLimit {
				t.Errorf("memory limit = %d, want %d", got, tc.wantLimit)
			}
		})
	}
}

func TestGCSettingsRejectNonsense(t *testing.T) {
	c, err := parseFlags([]string{"--store.gc-percent=-5"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.gc.apply(slog.New(slog.DiscardHandler)); err == nil {
		t.Error("a GC percent of -5 was accepted")
	}
}
