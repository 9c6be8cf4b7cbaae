package seriesid

import (
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
)

func TestClaims(t *testing.T) {
	legacy := ClaimSchemes(false)
	tests := []struct {
		name   string
		metric string
		typ    dto.MetricType
		want   []string
	}{
		{"a gauge claims its own name", "g", dto.MetricType_GAUGE, []string{"0g"}},
		{"a counter X_total also claims its family name X", "c_total", dto.MetricType_COUNTER, []string{"0c_total", "0c"}},
		{"a counter without _total claims its sample name", "c", dto.MetricType_COUNTER, []string{"0c", "0c_total"}},
		{"a summary claims _sum and _count", "s", dto.MetricType_SUMMARY, []string{"0s", "0s_sum", "0s_count"}},
		{"a histogram claims _bucket, _sum and _count", "h", dto.MetricType_HISTOGRAM, []string{"0h", "0h_bucket", "0h_sum", "0h_count"}},
		{"a gauge histogram also claims _gsum and _gcount", "h", dto.MetricType_GAUGE_HISTOGRAM, []string{"0h", "0h_bucket", "0h_sum", "0h_count", "0h_gsum", "0h_gcount"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Claims(tt.metric, tt.typ, legacy); !slices.Equal(got, tt.want) {
				t.Errorf("Claims(%q) = %q, want %q", tt.metric, got, tt.want)
			}
		})
	}
}

func TestUTF8NamesAreClaimedUnderEveryEscaping(t *testing.T) {
	got := Claims("a.b", dto.MetricType_GAUGE, ClaimSchemes(true))
	if len(got) != len(ClaimSchemes(true)) || !slices.Contains(got, "0a.b") || !slices.Contains(got, string(rune('0'+model.UnderscoreEscaping))+"a_b") {
		t.Errorf("Claims(%q) = %q, want the name itself and a_b under underscores among one claim per escaping", "a.b", got)
	}
	for _, c := range got {
		if d := DescribeClaim(c); c[0] != '0' && !strings.Contains(d, "under escaping=") {
			t.Errorf("DescribeClaim(%q) = %s, want the escaping named", c, d)
		}
	}
	if d := DescribeClaim("0a.b"); d != `"a.b"` {
		t.Errorf(`DescribeClaim("0a.b") = %s, want the name alone`, d)
	}
}

func TestLabelKeysMeetWhenAnEscapingWritesTwoNamesAlike(t *testing.T) {
	met := false
	for _, s := range LabelSchemes() {
		if LabelKey("a.b", s) == LabelKey("a_b", s) {
			met = true
		}
		if LabelKey("a", s) == LabelKey("b", s) {
			t.Errorf("under escaping=%s, distinct legacy names share a key", s)
		}
	}
	if !met {
		t.Error(`no escaping writes "a.b" and "a_b" alike`)
	}
}

func TestCheckLabelNameEscapes(t *testing.T) {
	tests := []struct {
		name    string
		label   string
		wantErr bool
	}{
		{"a legacy name is accepted", "a_b", false},
		{"a UTF-8 name that escapes to a plain name is accepted", "a.b", false},
		{"a non-Latin name is accepted", "über", false},
		{"a name that escapes to a leading __ is refused", "_.x", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := CheckLabelNameEscapes("m", tt.label); (err != nil) != tt.wantErr {
				t.Errorf("CheckLabelNameEscapes(%q) = %v, want an error: %v", tt.label, err, tt.wantErr)
			}
		})
	}
}
