package store

import (
	"runtime"
	"testing"
)

// BenchmarkStoreHeap reports the live heap a store of 10,000 groups of the
// bench payload holds (heap-MB), measured after a forced GC, and how much of
// it is the cached text bodies and the protobuf bytes. It is the in-process
// counterpart of `pushgate-bench rss` (issue #3 target 5).
func BenchmarkStoreHeap(b *testing.B) {
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := filledStore(b, 10_000)
		runtime.GC()
		runtime.ReadMemStats(&after)
		var text, proto int
		for _, g := range s.Groups() {
			for _, f := range g.Families() {
				proto += len(f.packed)
				if r := f.rendered.Load(); r != nil {
					text += len(r.body)
				}
			}
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/1e6, "heap-MB")
		b.ReportMetric(float64(text)/1e6, "text-MB")
		b.ReportMetric(float64(proto)/1e6, "packed-MB")
		runtime.KeepAlive(s)
	}
}

// BenchmarkGCWithStore measures one full garbage collection with 10,000
// bench groups stored: the mark work every collection pays for the store,
// which decides what a low GOGC costs per push.
func BenchmarkGCWithStore(b *testing.B) {
	s := filledStore(b, 10_000)
	runtime.GC()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runtime.GC()
	}
	runtime.KeepAlive(s)
}
