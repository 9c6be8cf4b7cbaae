package labelmatch

import (
	"strings"
	"testing"
)

// FuzzParse checks that every rejected input gets a one-line reason, and
// that every accepted one renders (String) to text that parses back to the
// same matchers, which behave the same.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`job="a"`,
		`{job="a",x=~"b"}`,
		`{job="a",}`,
		`job="a", env!="dev"`,
		`job='it"s'`,
		"job=~`a\\d+`",
		`"service.name"="x"`,
		`"a\nb"!~"(\n"`,
		`job=~"a\\qb"`,
		`job="\xff"`,
		`{}`,
		``,
	} {
		f.Add(seed, "a")
	}
	f.Fuzz(func(t *testing.T, in, value string) {
		ms, err := Parse(in)
		if err != nil {
			if msg := err.Error(); msg == "" || strings.ContainsAny(msg, "\r\n") {
				t.Fatalf("Parse(%q): error is not one non-empty line: %q", in, msg)
			}
			if ms != nil {
				t.Fatalf("Parse(%q): error %v with matchers %v", in, err, ms)
			}
			return
		}
		parts := make([]string, len(ms))
		for i, m := range ms {
			parts[i] = m.String()
		}
		rendered := strings.Join(parts, ",")
		again, err := Parse(rendered)
		if err != nil {
			t.Fatalf("Parse(%q) rendered as %q, which is rejected: %v", in, rendered, err)
		}
		if len(again) != len(ms) {
			t.Fatalf("Parse(%q) rendered as %q: %d matchers, then %d", in, rendered, len(ms), len(again))
		}
		for i := range ms {
			a, b := ms[i], again[i]
			if a.Name != b.Name || a.Op != b.Op || a.Value != b.Value {
				t.Fatalf("Parse(%q) rendered as %q: matcher %d is %v, then %v", in, rendered, i, a, b)
			}
			if a.Matches(value) != b.Matches(value) {
				t.Fatalf("Parse(%q) rendered as %q: matcher %d disagrees on %q", in, rendered, i, value)
			}
		}
	})
}
