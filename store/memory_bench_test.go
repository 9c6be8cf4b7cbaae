package store

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/groupkey"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/render"
)

// BenchmarkStoreHeap reports the live heap a store of 10,000 groups of the
// bench payload holds (heap-MB), measured after a forced GC, and again after
// a text and a gzip scrape filled the caches (scraped-heap-MB; the buffers
// and flate writers of package scrape's Writer are not counted), with the
// sizes of the protobuf bytes (packed-MB), the s2-compressed text bodies
// (text-MB) and the deflate segments (deflate-MB). It is the in-process
// counterpart of `pushgate-bench rss` (issue #3 target 5).
//
// fill=decoded pushes decoded families (filledStore); fill=text pushes the
// text bodies, as the web handler does; fill=repushed then pushes every
// group once more from its template (PushText), which keeps the families
// as skeletons and value areas.
func BenchmarkStoreHeap(b *testing.B) {
	for _, fill := range []string{"decoded", "text", "repushed"} {
		b.Run("fill="+fill, func(b *testing.B) { storeHeap(b, fill) })
	}
}

// storeHeap is BenchmarkStoreHeap with the fill named.
func storeHeap(b *testing.B, fill string) {
	for i := 0; i < b.N; i++ {
		var before, after, scraped runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var s *Store
		if fill == "decoded" {
			s = filledStore(b, 10_000)
		} else {
			s = textFilledStore(b, 10_000, fill == "repushed")
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		fillCachesAsScrapesDo(b, s)
		runtime.GC()
		runtime.ReadMemStats(&scraped)
		var text, deflate, proto int
		for _, g := range s.Groups() {
			for _, f := range g.Families() {
				pb, area := f.cache.Stored()
				proto += len(pb) + len(area)
				pushed, _, _ := f.cache.Pushed()
				text += len(pushed)
				if tb := f.cache.CachedText(); tb != nil {
					if !storetest.SameBlock(tb.Packed(), pushed) {
						text += len(tb.Packed())
					}
					deflate += len(tb.Segment().Deflate)
				}
			}
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/1e6, "heap-MB")
		b.ReportMetric(float64(scraped.HeapAlloc-before.HeapAlloc)/1e6, "scraped-heap-MB")
		b.ReportMetric(float64(text)/1e6, "text-MB")
		b.ReportMetric(float64(deflate)/1e6, "deflate-MB")
		b.ReportMetric(float64(proto)/1e6, "packed-MB")
		runtime.KeepAlive(s)
	}
}

// fillCachesAsScrapesDo leaves in s's caches what a text scrape and a first
// gzip scrape leave (package scrape imports store, so they are not run
// here): a text scrape of bodies the pushes rendered in text caches
// nothing, and the first gzip scrape caches each plain family's text body
// marked as seen, without a segment.
func fillCachesAsScrapesDo(b *testing.B, s *Store) {
	b.Helper()
	var sc render.Scratch
	for _, g := range s.Groups() {
		for _, f := range g.Families() {
			if !f.cache.Plain() {
				continue
			}
			tb, err := f.cache.Text(f, exposition.EncodingText, &sc)
			if err != nil {
				b.Fatal(err)
			}
			tb.MarkGzipSeen()
		}
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

// textFilledStore returns a store of n groups of the bench payload pushed
// as text bodies, as the web handler pushes them, and, with repush, pushed
// once more from their templates.
func textFilledStore(b *testing.B, n int, repush bool) *Store {
	b.Helper()
	s := New(Options{})
	tp := textPusher{s: s, templates: true}
	at := time.Unix(1_700_000_000, 0)
	rounds := 1
	if repush {
		rounds = 2
	}
	for r := range rounds {
		for i := range n {
			k := groupkey.New(map[string]string{"job": payload.Job, "instance": fmt.Sprintf("i%d", i)})
			if _, err := tp.push(b, k, Replace, payload.Text(i, r+1), at.Add(time.Duration(r)*time.Second)); err != nil {
				b.Fatal(err)
			}
		}
	}
	if repush && s.TemplatePushes() != uint64(n) {
		b.Fatalf("%d of %d pushes applied from templates", s.TemplatePushes(), n)
	}
	return s
}
