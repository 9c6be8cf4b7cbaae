package gzipcat

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/klauspost/compress/flate"

	"github.com/pushgate/pushgate/bench/payload"
)

// familyBodies returns the text bodies of the bench payload's families for
// 64 groups, one per family: the ~1 KB bodies a gzip scrape compresses into
// segments one by one.
func familyBodies(tb testing.TB) [][]byte {
	tb.Helper()
	var out [][]byte
	for i := 0; i < 64; i++ {
		text := payload.Text(i, 0)
		for len(text) > 0 {
			next := bytes.Index(text[1:], []byte("# HELP "))
			if next < 0 {
				out = append(out, text)
				break
			}
			out = append(out, text[:next+1])
			text = text[next+1:]
		}
	}
	if len(out) < 64*payload.FamilyCount() {
		tb.Fatalf("%d family bodies, want %d", len(out), 64*payload.FamilyCount())
	}
	return out
}

// BenchmarkSegmentLevel compresses each family body into its own
// sync-flushed deflate segment with one reused writer at each level,
// reporting the compressed size as a fraction of the text (ratio): the
// measurement behind Level.
func BenchmarkSegmentLevel(b *testing.B) {
	bodies := familyBodies(b)
	total := 0
	for _, body := range bodies {
		total += len(body)
	}
	for _, level := range []int{flate.HuffmanOnly, flate.BestSpeed, 2, 3, 4, 5, 6, 9} {
		b.Run(fmt.Sprintf("level=%d", level), func(b *testing.B) {
			var out bytes.Buffer
			zw, _ := flate.NewWriter(&out, level)
			b.SetBytes(int64(total))
			b.ReportAllocs()
			var n int
			for i := 0; i < b.N; i++ {
				n = 0
				for _, body := range bodies {
					out.Reset()
					zw.Reset(&out)
					zw.Write(body)
					zw.Flush()
					n += out.Len()
				}
			}
			b.ReportMetric(float64(n)/float64(total), "ratio")
		})
	}
	b.Run("stateless", func(b *testing.B) {
		var out bytes.Buffer
		b.SetBytes(int64(total))
		b.ReportAllocs()
		var n int
		for i := 0; i < b.N; i++ {
			n = 0
			for _, body := range bodies {
				out.Reset()
				flate.StatelessDeflate(&out, body, false, nil)
				n += out.Len()
			}
		}
		b.ReportMetric(float64(n)/float64(total), "ratio")
	})
}
