package store

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/exposition"
)

// filledStore returns a store holding n groups of the realistic batch-job
// payload (8 families, 74 samples each).
func filledStore(b testing.TB, n int) *Store {
	b.Helper()
	s := New(Options{})
	ctx := context.Background()
	for i := 0; i < n; i++ {
		k := NewGroupKey(map[string]string{"job": "bench", "instance": fmt.Sprintf("i%d", i)})
		if err := s.Push(ctx, Push{Key: k, Method: Replace, Families: payload.Families(i, 0), Time: time.Now()}); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkApply measures a checked PUT of the realistic payload (decoded
// already) into a store of 0, 10k and 100k groups: the cost must not grow
// with the store.
func BenchmarkApply(b *testing.B) {
	for _, n := range []int{0, 10_000, 100_000} {
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			s := filledStore(b, n)
			ctx := context.Background()
			bodies := make([][]byte, 64)
			for i := range bodies {
				bodies[i] = payload.Text(i, i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				fams := payload.Families(i%1000, i)
				b.StartTimer()
				k := NewGroupKey(map[string]string{"job": "bench", "instance": fmt.Sprintf("i%d", i%1000)})
				if err := s.Push(ctx, Push{Key: k, Method: Replace, Families: fams, Time: time.Now()}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkScrape measures rendering 10k groups in each format to a
// discarding writer, after a first scrape warmed the render cache.
func BenchmarkScrape(b *testing.B) {
	s := filledStore(b, 10_000)
	for _, enc := range []exposition.Encoding{exposition.EncodingText, exposition.EncodingOpenMetrics, exposition.EncodingProtobuf} {
		b.Run(enc.String(), func(b *testing.B) {
			f := exposition.NewFormat(enc)
			n, err := s.Snapshot().WriteTo(io.Discard, f, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Snapshot().WriteTo(io.Discard, f, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
