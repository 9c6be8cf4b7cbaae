package otlp

import (
	"strings"
	"testing"
)

func TestSettingsValidation(t *testing.T) {
	cases := []struct {
		name string
		s    Settings
		err  string // "" for valid
	}{
		{"the zero settings are Prometheus' defaults", Settings{}, ""},
		{"an unknown strategy", Settings{TranslationStrategy: "Escape"}, "unsupported OTLP translation strategy"},
		{"NoTranslation needs UTF-8 names", Settings{TranslationStrategy: "NoTranslation"}, "not allowed when UTF-8 names are disabled"},
		{"NoUTF8EscapingWithSuffixes needs UTF-8 names", Settings{TranslationStrategy: "NoUTF8EscapingWithSuffixes"}, "not allowed"},
		{"NoTranslation with UTF-8 names", Settings{TranslationStrategy: "NoTranslation", UTF8Names: true}, ""},
		{"promote all and a list", Settings{PromoteAllResourceAttributes: true, PromoteResourceAttributes: []string{"a"}}, "cannot be configured together"},
		{"ignore without promote all", Settings{IgnoreResourceAttributes: []string{"a"}}, "unless all resource attributes are promoted"},
		{"an empty promoted attribute", Settings{PromoteResourceAttributes: []string{" "}}, "empty promoted"},
		{"a repeated promoted attribute", Settings{PromoteResourceAttributes: []string{"a", " a"}}, "duplicated promoted"},
		{"grouping by job", Settings{GroupBy: []string{"job"}}, "would be the job label"},
		{"two grouping attributes of one label", Settings{GroupBy: []string{"a.b", "a_b"}}, "both the label"},
		{"grouping by the instance id", Settings{GroupBy: []string{"service.instance.id"}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.s.Validate()
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Errorf("Validate() = %v, want %q", err, c.err)
			}
		})
	}
}

func TestParseTranslationStrategyDefaultsToUnderscoreEscapingWithSuffixes(t *testing.T) {
	got, err := ParseTranslationStrategy("")
	if err != nil || string(got) != DefaultTranslationStrategy {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestParseDeltaMode(t *testing.T) {
	for in, want := range map[string]DeltaMode{"": Accumulate, "accumulate": Accumulate, "reject": Reject} {
		if got, err := ParseDeltaMode(in); err != nil || got != want {
			t.Errorf("%q: %v, %v", in, got, err)
		}
	}
	if _, err := ParseDeltaMode("sum"); err == nil {
		t.Error("no error for an unknown mode")
	}
}
