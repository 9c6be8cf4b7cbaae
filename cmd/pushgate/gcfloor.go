package main

import (
	"log/slog"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// defaultGCMinHeap is the heap size below which the collector does not
// run by default. Measured with bench/cluster.sh (1,000 groups, durable
// pushes, 2 shared cores), the live heap of a small store is a few tens of
// MiB, so at GOGC 50 a replica collected several times a second and the
// collector took a quarter of its CPU; GOGC 200 in the same run cut the
// gateways' CPU per push by about a fifth. A floor keeps that saving for
// small stores without giving up --store.gc-percent's headroom for large
// ones: above the floor nothing changes.
const defaultGCMinHeap = "64MiB"

// liveHeapMetric is the runtime metric the floor reads: the heap the last
// collection found live.
const liveHeapMetric = "/gc/heap/live:bytes"

// gcFloor keeps the collector's heap target at or above min bytes: after
// every collection it sets the GC percentage so that the target (the live
// heap grown by the percentage) reaches min, and never below base, the
// percentage configured.
type gcFloor struct {
	min     uint64
	base    int
	set     int // the percentage in force
	samples []metrics.Sample
	logger  *slog.Logger
}

// startGCFloor starts keeping the heap target at or above min bytes, over
// the GC percentage in force now. It does nothing when min is 0 or the
// collector is off.
func startGCFloor(min uint64, logger *slog.Logger) {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if min == 0 || base < 0 {
		return
	}
	f := &gcFloor{min: min, base: base, set: base, samples: []metrics.Sample{{Name: liveHeapMetric}}, logger: logger}
	f.adjust()
	f.arm()
}

// arm makes the next collection call adjust, then arm again: a finalizer
// runs once the collection that found its object unreachable is done.
func (f *gcFloor) arm() {
	sentinel := new([32]byte) // not tiny: a tiny object's finalizer may never run
	runtime.SetFinalizer(sentinel, func(*[32]byte) {
		f.adjust()
		f.arm()
	})
}

// adjust sets the percentage for the live heap now.
func (f *gcFloor) adjust() {
	metrics.Read(f.samples)
	if f.samples[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	f.adjustTo(f.samples[0].Value.Uint64())
}

// adjustTo sets the percentage for a live heap of live bytes.
func (f *gcFloor) adjustTo(live uint64) {
	if p := floorPercent(live, f.min, f.base); p != f.set {
		debug.SetGCPercent(p)
		f.set = p
		f.logger.Debug("garbage collector", "gc_percent", p, "live_heap", live, "min_heap", f.min)
	}
}

// floorPercent returns the GC percentage that grows a live heap of live
// bytes to min before the next collection, or base when that is more.
func floorPercent(live, min uint64, base int) int {
	if live >= min {
		return base
	}
	live = max(live, 1<<20) // a heap just started: no absurd percentage
	return max(int((min*100+live-1)/live)-100, base)
}
