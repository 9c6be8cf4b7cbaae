package render_test

import (
	"testing"

	"github.com/klauspost/compress/s2"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/exposition"
)

// BenchmarkTextBlock encodes and decodes the bench payload's family bodies
// (~1 KB each, 64 groups) as the s2 blocks TextBody keeps, reporting the
// encoded size as a fraction of the text (ratio).
func BenchmarkTextBlock(b *testing.B) {
	var bodies [][]byte
	for i := 0; i < 64; i++ {
		for _, mf := range payload.Families(i, 0) {
			body, err := exposition.AppendBody(nil, mf, exposition.NewFormat(exposition.EncodingText))
			if err != nil {
				b.Fatal(err)
			}
			bodies = append(bodies, body)
		}
	}
	total := 0
	for _, body := range bodies {
		total += len(body)
	}
	b.Run("encode", func(b *testing.B) {
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
	b.Run("decode", func(b *testing.B) {
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
