package exposition

import (
	"math"
	"strconv"
	"testing"
)

// TestParseTextFloat checks the digit-only fast path against
// strconv.ParseFloat, around its 15-digit limit and beside the inputs that
// must take the slow path.
func TestParseTextFloat(t *testing.T) {
	for _, s := range []string{
		"0", "7", "00012", "119903", "999999999999999", "123456789012345",
		"9007199254740993", "1234567890123456789", "-0", "-12", "+12",
		"1.5", "1e3", "NaN", "+Inf", "-Inf", "0x1p3", "1_000",
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
	for _, s := range []string{"", "12a", "1 2"} {
		if _, err := parseTextFloat(s); err == nil {
			t.Errorf("parseTextFloat(%q) succeeded, want an error", s)
		}
	}
}
