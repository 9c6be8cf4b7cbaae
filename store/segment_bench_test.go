package store

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/s2"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/exposition"
)

// payloadBodies returns the text bodies of the bench payload's families for
// 64 groups: the ~1 KB bodies a gzip scrape compresses one by one.
func payloadBodies(b testing.TB) [][]byte {
	b.Helper()
	var out [][]byte
	for i := 0; i < 64; i++ {
		for _, mf := range payload.Families(i, 0) {
			body, err := exposition.AppendBody(nil, mf, exposition.NewFormat(exposition.EncodingText))
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, body)
		}
	}
	return out
}

// BenchmarkSegmentLevel compresses each family body into its own sync-flushed
// deflate segment with one reused writer at each level, reporting the
// compressed size as a fraction of the text (ratio).
func BenchmarkSegmentLevel(b *testing.B) {
	bodies := payloadBodies(b)
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
	b.Run("s2", func(b *testing.B) {
		b.SetBytes(int64(total))
		var n int
		dst := make([]byte, 64<<10)
		for i := 0; i < b.N; i++ {
			n = 0
			for _, body := range bodies {
				n += len(s2.Encode(dst, body))
			}
		}
		b.ReportMetric(float64(n)/float64(total), "ratio")
	})
	b.Run("s2decode", func(b *testing.B) {
		var packed [][]byte
		for _, body := range bodies {
			packed = append(packed, s2.Encode(nil, body))
		}
		b.SetBytes(int64(total))
		dst := make([]byte, 64<<10)
		for i := 0; i < b.N; i++ {
			for _, p := range packed {
				s2.Decode(dst, p)
			}
		}
	})
}
