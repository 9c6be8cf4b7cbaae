package exposition

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestParseTextFloat checks the short-decimal fast path bit for bit
// against strconv.ParseFloat: edge cases around its 15-digit limit, inputs
// that must take the slow path, and random decimals.
func TestParseTextFloat(t *testing.T) {
	for _, s := range []string{
		"0", "7", "00012", "119903", "999999999999999", "123456789012345",
		"9007199254740993", "1234567890123456789", "-0", "-12", "+12",
		"1.5", "1e3", "NaN", "+Inf", "-Inf", "0x1p3", "1_000",
		"738644.277", "-3.25", "0.005", "0.1", "-0.0", "123456789.012345", "1234567890.1234567",
		".5", "5.", "1..2", "1.2.3", "-", "--1", "-.5", "0.30000000000000004",
	} {
		got, err := parseTextFloat(s)
		want, werr := strconv.ParseFloat(s, 64)
		if s == "0x1p3" || s == "1_000" {
			if err == nil {
				t.Errorf("parseTextFloat(%q) = %v, want an error", s, got)
			}
			continue
		}
		if (err != nil) != (werr != nil) {
			t.Fatalf("parseTextFloat(%q): error %v, strconv %v", s, err, werr)
		}
		if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("parseTextFloat(%q) = %v (bits %x), want %v (bits %x)", s, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
	// Random short decimals, the fast path's whole domain and beyond.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		s := strconv.FormatUint(rng.Uint64()>>rng.IntN(64), 10)
		if k := rng.IntN(len(s) + 1); k > 0 && k < len(s) {
			s = s[:k] + "." + s[k:]
		}
		if rng.IntN(2) == 0 {
			s = "-" + s
		}
		got, err := parseTextFloat(s)
		want, werr := strconv.ParseFloat(s, 64)
		if err != nil || werr != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("parseTextFloat(%q) = %v, %v; strconv gives %v, %v", s, got, err, want, werr)
		}
	}
	for _, s := range []string{"", "12a", "1 2", "1..2", "-"} {
		if _, err := parseTextFloat(s); err == nil {
			t.Errorf("parseTextFloat(%q) succeeded, want an error", s)
		}
	}
}
