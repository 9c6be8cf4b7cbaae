package gzipcat

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

func TestCRCCombineEqualsTheCRCOfTheConcatenation(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lengths := []int{0, 1, 2, 3, 7, 8, 64, 1000, 4096, 65537}
	for _, la := range lengths {
		for _, lb := range lengths {
			a := make([]byte, la)
			b := make([]byte, lb)
			for i := range a {
				a[i] = byte(rng.Uint32())
			}
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			want := crc32.ChecksumIEEE(append(append([]byte(nil), a...), b...))
			got := CRCCombine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), CRCShift(uint64(lb)))
			if got != want {
				t.Errorf("len(A)=%d len(B)=%d: combined %08x, want %08x", la, lb, got, want)
			}
		}
	}
}

func TestCRCMulByOneIsIdentity(t *testing.T) {
	for _, v := range []uint32{0, 1, crcOne, 0xdeadbeef, 0xffffffff} {
		if got := crcMul(v, crcOne); got != v {
			t.Errorf("crcMul(%08x, 1) = %08x", v, got)
		}
		if got := crcMul(crcOne, v); got != v {
			t.Errorf("crcMul(1, %08x) = %08x", v, got)
		}
	}
	if got := CRCShift(0); got != crcOne {
		t.Errorf("CRCShift(0) = %08x, want 1", got)
	}
}

// BenchmarkCRCCombine measures one combine, paid once per segment a member
// takes (once per cached family on every gzip scrape).
func BenchmarkCRCCombine(b *testing.B) {
	shift := CRCShift(731)
	crc := uint32(0x12345678)
	for i := 0; i < b.N; i++ {
		crc = CRCCombine(crc, uint32(i), shift)
	}
	b.ReportMetric(float64(crc>>31), "last-bit") // keeps the loop alive
}
