package scrape

import (
	"context"
	"fmt"
	"io"
	"math"
	"testing"
	"time"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/store"
)

// BenchmarkScrape measures rendering 10k groups in each format to a
// discarding writer, after a first scrape warmed the caches; "text changed"
// pushes 100 groups (1%) anew before each scrape, so their families render
// again; "text repushed" pushes 1,000 groups twice before each scrape,
// so the scrape renders their bodies from the stored bytes; "gzip first" pushes every group anew before each scrape (no
// segment, not seen by a gzip scrape), the cost of the first gzip scrape
// after a fill; "gzip second" does the same and then takes one gzip scrape
// untimed, which marks the bodies seen, so the scrape measured builds
// segmentBudget bytes of segments and streams the rest. Bytes per second
// count the uncompressed body.
func BenchmarkScrape(b *testing.B) {
	s := filledStore(b, 10_000)
	text := exposition.NewFormat(exposition.EncodingText)
	write := func(b *testing.B, f exposition.Format, gz bool) {
		var err error
		if gz {
			_, err = s.Snapshot().writeGzip(io.Discard, f, nil)
		} else {
			_, err = s.Snapshot().write(io.Discard, f, nil)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	cases := []struct {
		name   string
		f      exposition.Format
		gz     bool
		before func(i int)
	}{
		{name: "text", f: text},
		{name: "openmetrics", f: exposition.NewFormat(exposition.EncodingOpenMetrics)},
		{name: "protobuf", f: exposition.NewFormat(exposition.EncodingProtobuf)},
		{name: "text changed", f: text, before: func(i int) {
			ctx := context.Background()
			for j := 0; j < 100; j++ {
				g := (i*100 + j) % 10_000
				k := groupkey.New(map[string]string{"job": "bench", "instance": fmt.Sprintf("i%d", g)})
				if _, err := s.Push(ctx, store.Push{Key: k, Method: store.Replace, Families: payload.Families(g, i+1), Time: time.Now()}); err != nil {
					b.Fatal(err)
				}
			}
		}},
		{name: "text repushed", f: text, before: func(i int) {
			// 1,000 groups (10%) pushed twice: the second push renders no
			// text, as no scrape read the first one's, so the scrape
			// renders them (with a prerenderer beside it).
			for range 2 {
				ctx := context.Background()
				for j := 0; j < 1000; j++ {
					g := (i*1000 + j) % 10_000
					k := groupkey.New(map[string]string{"job": "bench", "instance": fmt.Sprintf("i%d", g)})
					if _, err := s.Push(ctx, store.Push{Key: k, Method: store.Replace, Families: payload.Families(g, i+1), Time: time.Now()}); err != nil {
						b.Fatal(err)
					}
				}
			}
		}},
		{name: "gzip cached", f: text, gz: true},
		{name: "gzip first", f: text, gz: true, before: func(i int) { pushPayload(b, s, 10_000, i+1, time.Now()) }},
		{name: "gzip second", f: text, gz: true, before: func(i int) {
			pushPayload(b, s, 10_000, i+1, time.Now())
			write(b, text, true)
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			n, err := s.Snapshot().write(io.Discard, c.f, nil)
			if err != nil {
				b.Fatal(err)
			}
			// Warm up: two gzip scrapes with no budget give every family
			// its segment.
			for k := 0; k < 2 && c.gz; k++ {
				limits := defaultLimits()
				limits.budget = math.MaxInt
				if _, err := s.w.writeGzip(io.Discard, s.Store.Snapshot(), c.f, nil, limits); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if c.before != nil {
					b.StopTimer()
					c.before(i)
					b.StartTimer()
				}
				write(b, c.f, c.gz)
			}
		})
	}
}
