package store

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/groupkey"
)

// filledStore returns a store holding n groups of the realistic batch-job
// payload (8 families, 74 samples each).
func filledStore(b testing.TB, n int) *Store {
	b.Helper()
	s := New(Options{})
	ctx := context.Background()
	for i := 0; i < n; i++ {
		k := groupkey.New(map[string]string{"job": "bench", "instance": fmt.Sprintf("i%d", i)})
		if _, err := s.Push(ctx, Push{Key: k, Method: Replace, Families: payload.Families(i, 0), Time: time.Now()}); err != nil {
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
				k := groupkey.New(map[string]string{"job": "bench", "instance": fmt.Sprintf("i%d", i%1000)})
				if _, err := s.Push(ctx, Push{Key: k, Method: Replace, Families: fams, Time: time.Now()}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTextCache compares the two ways of caching the text bodies of
// 10k groups for a text scrape: raw bytes written as they are, or s2
// blocks decoded into a reused buffer as they are written (the design
// render.TextBody kept: 3.6x less memory).
func BenchmarkTextCache(b *testing.B) {
	s := filledStore(b, 10_000)
	var raw, packed [][]byte
	total := 0
	for _, g := range s.Groups() {
		for _, f := range g.Families() {
			// The text bodies the pushes rendered, what a text scrape
			// writes.
			pushed, _, _ := f.cache.Pushed()
			body, err := s2.Decode(nil, pushed)
			if err != nil {
				b.Fatal(err)
			}
			raw = append(raw, body)
			packed = append(packed, pushed)
			total += len(body)
		}
	}
	b.Run("raw", func(b *testing.B) {
		b.SetBytes(int64(total))
		w := bufio.NewWriterSize(io.Discard, 64<<10)
		for i := 0; i < b.N; i++ {
			for _, body := range raw {
				w.Write(body)
			}
			w.Flush()
		}
	})
	b.Run("s2", func(b *testing.B) {
		b.SetBytes(int64(total))
		w := bufio.NewWriterSize(io.Discard, 64<<10)
		var scratch []byte
		for i := 0; i < b.N; i++ {
			for _, p := range packed {
				n, _ := s2.DecodedLen(p)
				if cap(scratch) < n {
					scratch = make([]byte, n)
				}
				body, err := s2.Decode(scratch[:cap(scratch)], p)
				if err != nil {
					b.Fatal(err)
				}
				w.Write(body)
			}
			w.Flush()
		}
	})
}
