package gzipcat

// CRC-32 (IEEE) of a concatenation from the CRCs of its parts, so that a
// member can checksum a body made of segments compressed apart without
// reading their text.
//
// The math: a CRC register is a polynomial over GF(2) modulo the CRC
// polynomial P. Appending n bytes to a message multiplies the register by
// x^(8n) mod P and adds the register the n bytes alone produce; with the
// standard pre- and post-inversion the inversions cancel, which leaves
//
//	crc(A‖B) = crc(A)·x^(8|B|) mod P  ⊕  crc(B).
//
// Everything here uses the bit order of hash/crc32's IEEE table (reflected):
// bit 31 holds the coefficient of x^0 and bit 0 that of x^31.

// crcPolyReflected is the IEEE polynomial without its x^32 term, reflected.
const crcPolyReflected = 0xedb88320

// crcOne is the polynomial 1 (x^0) in the reflected order.
const crcOne = 1 << 31

// crcMul returns a·b mod P. Each step adds b when a has the current
// coefficient, then multiplies b by x (a right shift in the reflected order,
// reducing by P when the x^31 coefficient falls off). Branch-free: it runs
// once per segment a member takes.
func crcMul(a, b uint32) uint32 {
	var p uint32
	for i := 31; i >= 0 && a != 0; i-- {
		p ^= b & -(a >> 31)
		a <<= 1
		b = b>>1 ^ crcPolyReflected&-(b&1)
	}
	return p
}

// CRCShift returns x^(8n) mod P, the operator that moves a CRC-32 past n
// bytes, by repeated squaring: x^8, x^16, x^32, … multiplied in for each set
// bit of n. Keep it beside a body whose CRC is combined often: it depends
// only on the body's length.
func CRCShift(n uint64) uint32 {
	result := uint32(crcOne)
	base := uint32(crcOne >> 8) // x^8
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			result = crcMul(result, base)
		}
		base = crcMul(base, base)
	}
	return result
}

// CRCCombine returns the CRC-32 (IEEE) of A‖B from crcA, crcB and shiftB =
// CRCShift(len(B)).
func CRCCombine(crcA, crcB, shiftB uint32) uint32 {
	return crcMul(crcA, shiftB) ^ crcB
}
