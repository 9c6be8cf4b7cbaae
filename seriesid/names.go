package seriesid

import (
	"fmt"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/pushgate/pushgate/exposition"
)

// ClaimSchemes returns the escapings whose names the store must keep apart.
// Under the legacy name rules every stored name is a legacy name, which
// every escaping leaves as it is: the names themselves are enough.
func ClaimSchemes(utf8Names bool) []model.EscapingScheme {
	if utf8Names {
		return exposition.EscapingSchemes[:]
	}
	return exposition.EscapingSchemes[:1]
}

// Claims returns every name a family of name and typ exposes in a scrape
// under the given escapings, each prefixed by the scheme's byte: the escaped
// name, the sample names of its type (text and OpenMetrics), and its
// OpenMetrics family name, a counter X_total being the family X with the
// sample X_total. Two families of different names whose claims meet would
// show one series or one family twice. X_created is not claimed: the
// gateway never writes created samples, and Python's client pushes every
// counter, summary and histogram X with a gauge X_created beside it.
func Claims(name string, typ dto.MetricType, schemes []model.EscapingScheme) []string {
	out := make([]string, 0, 6*len(schemes))
	for _, s := range schemes {
		p := string(rune('0' + s))
		e := exposition.EscapeMetricName(name, s)
		out = append(out, p+e)
		fam := e
		var suffixes []string
		switch typ {
		case dto.MetricType_COUNTER:
			if base, ok := strings.CutSuffix(e, "_total"); ok && base != "" {
				fam = base
				out = append(out, p+fam)
			}
			suffixes = []string{"_total"}
		case dto.MetricType_SUMMARY:
			suffixes = []string{"_sum", "_count"}
		case dto.MetricType_HISTOGRAM:
			suffixes = []string{"_bucket", "_sum", "_count"}
		case dto.MetricType_GAUGE_HISTOGRAM:
			suffixes = []string{"_bucket", "_sum", "_count", "_gsum", "_gcount"}
		}
		for _, suf := range suffixes {
			if c := p + fam + suf; !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// DescribeClaim words a claim for a reason: the name, and the escaping it
// is written under when that is not the name itself.
func DescribeClaim(c string) string {
	s := model.EscapingScheme(c[0] - '0')
	if s == model.NoEscaping {
		return fmt.Sprintf("%q", c[1:])
	}
	return fmt.Sprintf("%q under escaping=%s", c[1:], s)
}

// LabelSchemes returns the escapings under which two label names can
// become one (without escaping they are themselves).
func LabelSchemes() []model.EscapingScheme { return exposition.EscapingSchemes[1:] }

// LabelKey is a label name as one escaping writes it, prefixed by the
// scheme's byte.
func LabelKey(name string, s model.EscapingScheme) string {
	return string(rune('0'+s)) + exposition.EscapeLabelName(name, s)
}

// CheckLabelNameEscapes rejects a UTF-8 label name that the underscores
// escaping (what Prometheus 2 and every legacy scraper asks for) turns into
// a name starting with "__", which Prometheus reserves and drops. Dots
// escaping is not checked: it writes every name that starts with a
// character outside [a-zA-Z] that way ("über" as "__ber"), and refusing
// those would refuse most non-Latin label names for a scheme few scrapers
// ask for.
func CheckLabelNameEscapes(metric, name string) error {
	if model.LegacyValidation.IsValidLabelName(name) {
		return nil
	}
	for _, s := range []model.EscapingScheme{model.UnderscoreEscaping} {
		e := exposition.EscapeLabelName(name, s)
		if !strings.HasPrefix(e, "__") {
			continue
		}
		if metric == "" {
			return fmt.Errorf("grouping label name %q is written %q under escaping=%s, a name Prometheus reserves", name, e, s)
		}
		return fmt.Errorf("metric %q: label name %q is written %q under escaping=%s, a name Prometheus reserves", metric, name, e, s)
	}
	return nil
}
