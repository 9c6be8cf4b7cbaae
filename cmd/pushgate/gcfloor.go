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
//
// Measured with pushgate-bench in bench/compare.sh's order (one process
// filled to 1,000, then 10,000, then 100,000 groups, 10 s of keep-alive
// PUTs by 8 clients at each size; 5 alternating runs on 2 shared cores at
// load average 6-13; medians), this rule against 0 and the rule before
// (floorPercent tells what was wrong with it):
//
//	groups    RSS after the fill, MiB        server CPU per push, µs
//	          this   0      before           this   0     before
//	1,000     42     36     42               247    297   267
//	10,000    146    148    153 (peak 274)   291    306   307
//	100,000   1,188  1,196  1,214            333    328   360
//
// A process filled straight to 10,000 groups: 143 MiB, 144 with 0, 219
// before. At 1,000 groups the collector's own CPU per push (gctrace, 6
// fresh runs) is 4 µs against 25 µs with 0, and the RSS after 20 s of
// pushes 85 MiB against 42: the floor is memory paid for CPU. Past it, at
// 10,000 groups and up, the rules differ by less than the runs do.
//
// 32 MiB since issue #24 (it was 64). Pushes had become cheaper and leaner
// (about 100 µs of CPU and 5 KB allocated per push), and a 64 MiB floor
// held a small store at 85 MiB of RSS and left its pages behind when the
// store grew: in compare.sh's order (1,000 groups pushed to, in text and
// OTLP, for 40 s, then a fill to 10,000) the RSS after the fill was 121 MiB
// with 64, 116 with 32 and 114-116 with 0 (2 runs each). Fresh processes
// of the static build, filled straight to each size with checked PUTs,
// then 10 s of keep-alive PUTs by 8 clients (2 runs of each setting,
// alternating; the collector's CPU from GODEBUG=gctrace=1, 2 more runs):
//
//	groups    RSS after the fill, MiB    RSS after the pushes, MiB   collector µs/push
//	          64      32      0          64       32       0           64     32     0
//	1,000     38-38   37-38   33-34      83-85    54-55    34-35       0.8    1.5-2.1  14-15
//	10,000    108-109 109-111 110-110    145-146  145-146  146-147     -      -      -
//	100,000   888-898 899-907 909-909    1,005-1,061 994-994 1,016-1,034 -    -      -
//
// At 1,000 groups 32 MiB keeps nine tenths of the collector's saving for
// 30 MiB less; from 10,000 groups on the live heap is past either floor,
// and the server's CPU per push (84-174 µs across these runs) did not
// differ by setting beyond the runs' spread.
const defaultGCMinHeap = "32MiB"

// runtimeHeapMinimum is the Go runtime's smallest heap goal at GOGC 100
// (defaultHeapMinimum in runtime/mgcpacer.go). The runtime scales it with
// the GC percent: at percent p the goal is never below 4 MiB × p/100.
const runtimeHeapMinimum = 4 << 20

// The runtime metrics the floor reads: the heap the last collection found
// live, and the stacks and globals it scanned, which the runtime's heap goal
// grows by the percent as well.
const (
	liveHeapMetric = "/gc/heap/live:bytes"
	stackMetric    = "/gc/scan/stack:bytes"
	globalsMetric  = "/gc/scan/globals:bytes"
)

// gcFloor keeps the collector's heap goal near min bytes while the live
// heap is smaller: after every collection it sets the GC percentage so that
// the goal (the live heap grown by the percentage) comes to min and no
// further, and never below base, the percentage configured. Once the live
// heap reaches min the percentage is base and the floor costs nothing.
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
	f := &gcFloor{min: min, base: base, set: base, samples: []metrics.Sample{{Name: liveHeapMetric}, {Name: stackMetric}, {Name: globalsMetric}}, logger: logger}
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
	var v [3]uint64
	for i, s := range f.samples {
		if s.Value.Kind() != metrics.KindUint64 {
			return
		}
		v[i] = s.Value.Uint64()
	}
	f.adjustTo(v[0], v[1]+v[2])
}

// adjustTo sets the percentage for a live heap of live bytes and roots
// bytes of stacks and globals.
func (f *gcFloor) adjustTo(live, roots uint64) {
	if p := floorPercent(live, roots, f.min, f.base); p != f.set {
		debug.SetGCPercent(p)
		f.set = p
		f.logger.Debug("garbage collector", "gc_percent", p, "live_heap", live, "min_heap", f.min)
	}
}

// floorPercent returns the GC percentage that lets a live heap of live
// bytes, with roots bytes of stacks and globals, grow to floor bytes before
// the next collection, or base when that is more. The runtime's goal is
// live + (live+roots) × p/100, but never below 4 MiB × p/100, so p is at
// most floor/4 MiB × 100 (1,600 for 64 MiB): beyond that the runtime's
// minimum, not the floor, sets the goal. The rule before this one grew the
// live heap alone and let an empty heap have 6,300%: the goal after the
// first collection was 252 MiB, which a 10,000-group fill reached before
// its second collection, and its RSS stayed there (see defaultGCMinHeap).
func floorPercent(live, roots, floor uint64, base int) int {
	if live >= floor {
		return base
	}
	p := int(floor * 100 / runtimeHeapMinimum)
	if scan := live + roots; scan > 0 {
		p = min(p, int((floor-live)*100/scan))
	}
	return max(p, base)
}
