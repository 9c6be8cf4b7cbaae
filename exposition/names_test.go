package exposition

import (
	"testing"

	"github.com/prometheus/common/model"
)

func TestValidMetricName(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		utf8Names bool
		want      bool
	}{
		{"a legacy name is valid", "http_requests_total", false, true},
		{"a name with colons is valid", "job:rate:5m", false, true},
		{"a leading digit is invalid", "1abc", false, false},
		{"a dot is invalid in legacy mode", "a.b", false, false},
		{"a dot is valid in UTF-8 mode", "a.b", true, true},
		{"an empty name is invalid in legacy mode", "", false, false},
		{"an empty name is invalid in UTF-8 mode", "", true, false},
		{"broken UTF-8 is invalid in UTF-8 mode", "a\xffb", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ValidMetricName(tt.in, tt.utf8Names); got != tt.want {
				t.Errorf("ValidMetricName(%q, %v) = %v, want %v", tt.in, tt.utf8Names, got, tt.want)
			}
		})
	}
}

func TestValidLabelName(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		utf8Names bool
		want      bool
	}{
		{"a legacy name is valid", "instance", false, true},
		{"a leading underscore is valid", "_x", false, true},
		{"a colon is invalid in legacy mode", "a:b", false, false},
		{"a dash is invalid in legacy mode", "a-b", false, false},
		{"a dash is valid in UTF-8 mode", "a-b", true, true},
		{"a leading digit is invalid in legacy mode", "0x", false, false},
		{"an empty name is invalid in UTF-8 mode", "", true, false},
		{"broken UTF-8 is invalid in UTF-8 mode", "\xff", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ValidLabelName(tt.in, tt.utf8Names); got != tt.want {
				t.Errorf("ValidLabelName(%q, %v) = %v, want %v", tt.in, tt.utf8Names, got, tt.want)
			}
		})
	}
}

func TestLegacyNamesFollowThePrometheusLegacyRules(t *testing.T) {
	for _, name := range []string{
		"", "a", "_", ":", "a:b", "job:rate:5m", "0", "0a", "a0", "_0", ":0",
		"a.b", "a-b", "a b", "ü", "aü", "a\xff", "\xff", "a\x00", "Z_9",
		"\u00e9t\u00e9", "\xc3", "a\xc3\xa9",
	} {
		if got, want := legacyName(name), model.LegacyValidation.IsValidMetricName(name); got != want {
			t.Errorf("legacyName(%q) = %v, model says %v", name, got, want)
		}
		if got, want := legacyLabelName(name), model.LegacyValidation.IsValidLabelName(name); got != want {
			t.Errorf("legacyLabelName(%q) = %v, model says %v", name, got, want)
		}
	}
}

func TestQuoteNamesQuotesOnlyNamesThatAreNotLegacy(t *testing.T) {
	tests := []struct {
		name          string
		in            string
		metric, label string
	}{
		{"a legacy name is bare", "job", "job", "job"},
		{"a colon is bare in a metric name only", "a:b", "a:b", `"a:b"`},
		{"a dot is quoted", "a.b", `"a.b"`, `"a.b"`},
		{"a line break is escaped so that the message stays one line", "a\nb", `"a\nb"`, `"a\nb"`},
		{"an empty name is quoted", "", `""`, `""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := QuoteMetricName(tt.in); got != tt.metric {
				t.Errorf("QuoteMetricName(%q) = %s, want %s", tt.in, got, tt.metric)
			}
			if got := QuoteLabelName(tt.in); got != tt.label {
				t.Errorf("QuoteLabelName(%q) = %s, want %s", tt.in, got, tt.label)
			}
		})
	}
}

func TestUnescapeLabelName(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"a name without the prefix is unchanged", "foo_bar", "foo_bar"},
		{"an escaped dot is decoded", "U__foo_2e_bar", "foo.bar"},
		{"a double underscore is one underscore", "U__foo__bar", "foo_bar"},
		{"a multi-byte code point is decoded", "U__caf_e9_", "café"},
		{"an emoji is decoded", "U___1f600_", "😀"},
		{"upper-case hex is decoded", "U__a_2E_b", "a.b"},
		{"a plain name with the prefix is decoded", "U__abc", "abc"},
		{"an unterminated code is left as is", "U__foo_2e", "U__foo_2e"},
		{"a non-hex code is left as is", "U__foo_zz_", "U__foo_zz_"},
		{"a trailing single underscore is left as is", "U__foo_", "U__foo_"},
		{"a too long code is left as is", "U__a_1234567_", "U__a_1234567_"},
		{"a surrogate code point is left as is", "U__a_d800_", "U__a_d800_"},
		{"a lower-case prefix is not a prefix", "u__foo_2e_bar", "u__foo_2e_bar"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UnescapeLabelName(tt.in); got != tt.want {
				t.Errorf("UnescapeLabelName(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestEscapeLabelName(t *testing.T) {
	tests := []struct {
		name, in                    string
		underscores, dots, valueEsc string
	}{
		{"a legacy name is kept in every scheme, dots included", "a_b", "a_b", "a_b", "a_b"},
		{"a legacy name that looks escaped is kept", "U__a_2e_b", "U__a_2e_b", "U__a_2e_b", "U__a_2e_b"},
		{"a colon is not a label character", "x:y", "x_y", "x__y", "U__x_3a_y"},
		{"a dot", "a.b", "a_b", "a_dot_b", "U__a_2e_b"},
		{"a leading digit", "0a", "_a", "__a", "U___30_a"},
		{"a non-ASCII letter", "ü", "_", "__", "U___fc_"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for scheme, want := range map[model.EscapingScheme]string{
				model.NoEscaping:            tt.in,
				model.UnderscoreEscaping:    tt.underscores,
				model.DotsEscaping:          tt.dots,
				model.ValueEncodingEscaping: tt.valueEsc,
			} {
				if got := EscapeLabelName(tt.in, scheme); got != want {
					t.Errorf("EscapeLabelName(%q, %s) = %q, want %q", tt.in, scheme, got, want)
				}
			}
			if legacyLabelName(tt.in) {
				return
			}
			if got := model.UnescapeName(EscapeLabelName(tt.in, model.ValueEncodingEscaping), model.ValueEncodingEscaping); got != tt.in {
				t.Errorf("values escaping does not round-trip: %q -> %q", tt.in, got)
			}
		})
	}
}

func TestEscapeMetricName(t *testing.T) {
	tests := []struct {
		name, in                    string
		underscores, dots, valueEsc string
	}{
		{"a legacy name is kept in every scheme, dots included", "a_b", "a_b", "a_b", "a_b"},
		{"a colon is a metric-name character", "ns:a_b", "ns:a_b", "ns:a_b", "ns:a_b"},
		{"a dot", "a.b", "a_b", "a_dot_b", "U__a_2e_b"},
		{"a leading digit", "0a", "_a", "__a", "U___30_a"},
		{"a non-ASCII letter", "ü", "_", "__", "U___fc_"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for scheme, want := range map[model.EscapingScheme]string{
				model.NoEscaping:            tt.in,
				model.UnderscoreEscaping:    tt.underscores,
				model.DotsEscaping:          tt.dots,
				model.ValueEncodingEscaping: tt.valueEsc,
			} {
				if got := EscapeMetricName(tt.in, scheme); got != want {
					t.Errorf("EscapeMetricName(%q, %s) = %q, want %q", tt.in, scheme, got, want)
				}
			}
		})
	}
}

// utf8LabelNames are label names that are valid UTF-8 names but not legacy
// label names, one of each kind of character that needs escaping.
var utf8LabelNames = []string{
	"x:y", ":x", "x:", "a.b", "0a", "9", "ü", "naïve_name", "😀", "with space", "a-b",
	"q\"uote", "back\\slash", "new\nline", "_0:", "U__x.y", "x__y:z", "日本語",
}

func TestEscapedLabelNamesAreLegacyAndValuesRoundTrip(t *testing.T) {
	for _, name := range utf8LabelNames {
		t.Run(name, func(t *testing.T) {
			for _, scheme := range EscapingSchemes[1:] {
				got := EscapeLabelName(name, scheme)
				if !model.LegacyValidation.IsValidLabelName(got) {
					t.Errorf("EscapeLabelName(%q, %s) = %q, not a legacy label name", name, scheme, got)
				}
			}
			escaped := EscapeLabelName(name, model.ValueEncodingEscaping)
			if got := model.UnescapeName(escaped, model.ValueEncodingEscaping); got != name {
				t.Errorf("values escaping does not round-trip: %q -> %q -> %q", name, escaped, got)
			}
		})
	}
}
