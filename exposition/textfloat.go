package exposition

import (
	"errors"
	"strconv"
)

// parseTextFloat parses a sample value as expfmt does: strconv's syntax
// without hexadecimal floats and underscores.
func parseTextFloat(s string) (float64, error) {
	if v, ok := parseShortDecimal(s); ok {
		return v, nil
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == 'p' || c == 'P' || c == '_' {
			return 0, errors.New("unsupported character in float")
		}
	}
	return strconv.ParseFloat(s, 64)
}

// exactPow10 holds the powers of ten a float64 represents exactly.
var exactPow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// parseShortDecimal parses what most sample values are, an optional '-'
// and at most 15 digits with at most one '.' between two of them, and
// reports false for anything else. The digits, read as an integer, and the
// power of ten to divide them by are both exact in a float64, so the one
// rounding of the division gives the correctly rounded value ParseFloat
// returns (Clinger's fast path), without ParseFloat's general parsing:
// ParseFloat and the character check were 8.5% of a text push's CPU
// (BenchmarkPush). With this and the family lookup reused across lines,
// BenchmarkDecodePooledText went from 26-32 to 18-25 us in five
// alternating runs.
func parseShortDecimal(s string) (float64, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 16 {
		return 0, false
	}
	var m uint64
	digits, frac := 0, -1 // frac counts the digits after the '.', -1 before one
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if frac >= 0 {
				frac++
			}
		case c == '.' && frac < 0 && i > 0 && i < len(s)-1:
			frac = 0
		default:
			return 0, false
		}
	}
	if digits > 15 {
		return 0, false
	}
	v := float64(m)
	if frac > 0 {
		v /= exactPow10[frac]
	}
	if neg {
		v = -v
	}
	return v, true
}
