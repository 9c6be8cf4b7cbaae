package exposition

import (
	"strconv"
	"strings"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
)

// ValidMetricName reports whether name is a valid metric name. Under the
// legacy rules (utf8 false) it must match [a-zA-Z_:][a-zA-Z0-9_:]*; under the
// UTF-8 rules it must be non-empty, valid UTF-8.
func ValidMetricName(name string, utf8Names bool) bool {
	if utf8Names {
		return name != "" && utf8.ValidString(name)
	}
	return legacyName(name)
}

// ValidLabelName reports whether name is a valid label name. Under the legacy
// rules (utf8 false) it must match [a-zA-Z_][a-zA-Z0-9_]*; under the UTF-8
// rules it must be non-empty, valid UTF-8.
func ValidLabelName(name string, utf8Names bool) bool {
	if utf8Names {
		return name != "" && utf8.ValidString(name)
	}
	return legacyLabelName(name)
}

// QuoteMetricName returns name as messages write it: bare when it is a
// legacy metric name, otherwise Go-quoted, as Prometheus 3 writes a UTF-8
// name, so that no name (a UTF-8 name may hold CR or LF) breaks a one-line
// message.
func QuoteMetricName(name string) string {
	return quoteUnlessLegacy(name, legacyName(name))
}

// QuoteLabelName is QuoteMetricName for label names, whose legacy alphabet
// has no ':'. A Matcher, a groupkey.Key and a series in an error message write
// their label names with it.
func QuoteLabelName(name string) string {
	return quoteUnlessLegacy(name, legacyLabelName(name))
}

// quoteUnlessLegacy is the one rule QuoteMetricName and QuoteLabelName
// share: a legacy name bare, any other name Go-quoted.
func quoteUnlessLegacy(name string, legacy bool) string {
	if legacy {
		return name
	}
	return strconv.Quote(name)
}

// UnescapeLabelName decodes a label name written with the "U__"
// value-encoding escaping that clients use for UTF-8 label names in push
// URLs: the name starts with "U__", a literal '_' is written as "__", and any
// other character outside [A-Za-z0-9_] as "_<hex code point>_". Names without
// the prefix, and names holding an invalid sequence, are returned unchanged.
func UnescapeLabelName(s string) string {
	return model.UnescapeName(s, model.ValueEncodingEscaping)
}

// legacyName reports whether name is a legacy metric name
// ([a-zA-Z_:][a-zA-Z0-9_:]*): every escaping scheme leaves such a metric
// name alone, and the text formats write it bare. It looks at bytes instead
// of decoding runes, as model.LegacyValidation does, with the same answer:
// every byte of a multi-byte rune, or of an invalid sequence, fails the check
// as the rune would. Rendering asks it for every name it writes.
func legacyName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':' || c >= '0' && c <= '9' && i > 0) {
			return false
		}
	}
	return true
}

// legacyLabelName reports whether name is a legacy label name
// ([a-zA-Z_][a-zA-Z0-9_]*), by looking at bytes like legacyName: every
// escaping scheme leaves such a label name alone, and the text formats write
// it bare. ':' is a metric-name character only: a label name holding one is
// escaped or quoted like any other UTF-8 name (prometheus/common v0.72.1
// checks label names with the metric-name rule and writes x:y="1", which no
// parser accepts).
func legacyLabelName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= '0' && c <= '9' && i > 0) {
			return false
		}
	}
	return true
}

// LegacyNames reports whether every name in mf is a legacy name of its kind,
// so that no escaping scheme changes it and no format quotes it: the family
// name and any __name__ label value a legacy metric name
// ([a-zA-Z_:][a-zA-Z0-9_:]*), every label name, exemplar label names
// included, a legacy label name ([a-zA-Z_][a-zA-Z0-9_]*, no ':').
//
// It is the one definition of a plain family: AppendBody renders a family
// for which it holds to the same bytes in every Format of an Encoding
// (escaping is a no-op), so the store renders such a family once per
// Encoding, at push time, and copies that body into every scrape
// (TestPlainFamiliesRenderAlikeInEveryEscaping).
func LegacyNames(mf *dto.MetricFamily) bool {
	if !legacyName(mf.GetName()) {
		return false
	}
	for _, m := range mf.Metric {
		if !legacyMetric(m) {
			return false
		}
	}
	return true
}

// legacyMetric reports whether every name in m is a legacy name of its
// kind (see LegacyNames).
func legacyMetric(m *dto.Metric) bool {
	for _, lp := range m.Label {
		name := lp.GetName()
		if name == model.MetricNameLabel && !legacyName(lp.GetValue()) {
			return false
		}
		if !legacyLabelName(name) {
			return false
		}
	}
	return legacyExemplars(m)
}

// LegacyExemplarNames reports whether every exemplar label name in mf is a
// legacy label name: the part of LegacyNames that a check of the series'
// names leaves out, since exemplars are no part of a series.
func LegacyExemplarNames(mf *dto.MetricFamily) bool {
	for _, m := range mf.Metric {
		if !legacyExemplars(m) {
			return false
		}
	}
	return true
}

// legacyExemplars reports whether every exemplar label name in m (a
// counter's exemplar, a histogram's bucket and native exemplars) is a legacy
// label name. Exemplar labels are written in OpenMetrics and protobuf.
func legacyExemplars(m *dto.Metric) bool {
	if c := m.Counter; c != nil && c.Exemplar != nil && !legacyLabels(c.Exemplar.Label) {
		return false
	}
	if h := m.Histogram; h != nil {
		for _, b := range h.Bucket {
			if b.Exemplar != nil && !legacyLabels(b.Exemplar.Label) {
				return false
			}
		}
		for _, e := range h.Exemplars {
			if e != nil && !legacyLabels(e.Label) {
				return false
			}
		}
	}
	return true
}

// legacyLabels reports whether every name in labels is a legacy label name.
func legacyLabels(labels []*dto.LabelPair) bool {
	for _, lp := range labels {
		if !legacyLabelName(lp.GetName()) {
			return false
		}
	}
	return true
}

// EscapingSchemes lists every name escaping a scrape can ask for
// (escaping=allow-utf-8, underscores, dots, values). Two different names
// that one of them maps to one name would be one name to that scraper, so
// the store checks pushed names under each (DESIGN §5).
var EscapingSchemes = [...]model.EscapingScheme{
	model.NoEscaping,
	model.UnderscoreEscaping,
	model.DotsEscaping,
	model.ValueEncodingEscaping,
}

// EscapeMetricName returns the metric name as a scrape under scheme writes
// it: a legacy metric name (':' included) as it is, in every scheme, and any
// other name as model.EscapeName escapes it. Under dots, model.EscapeName
// would double the underscores of a legacy name too, but a scrape leaves
// legacy names alone, as model.EscapeMetricFamily and every client library
// do: escaping=dots must not rename go_goroutines. So a legacy "a_dot_b" and
// a UTF-8 "a.b" are one name to a dots scraper.
func EscapeMetricName(name string, scheme model.EscapingScheme) string {
	if scheme == model.NoEscaping || legacyName(name) {
		return name
	}
	return model.EscapeName(name, scheme)
}

// EscapeLabelName returns the label name as a scrape under scheme writes it:
// a legacy label name as it is, in every scheme (dots included, see
// EscapeMetricName), and any other name by model.EscapeName's rules with the
// label alphabet: ':' is valid in metric names but not in label names, so it
// is escaped like any other character outside [a-zA-Z0-9_] (model.EscapeName
// keeps it, and a scrape holding x:y="1" does not parse). The values
// escaping of a valid UTF-8 name that is not a legacy label name
// round-trips through model.UnescapeName.
func EscapeLabelName(name string, scheme model.EscapingScheme) string {
	if name == "" || scheme == model.NoEscaping || legacyLabelName(name) {
		return name
	}
	var b strings.Builder
	b.Grow(len(name) + 8)
	switch scheme {
	case model.UnderscoreEscaping:
		for i, r := range name {
			if legacyLabelRune(r, i) {
				b.WriteRune(r)
			} else {
				b.WriteByte('_')
			}
		}
	case model.DotsEscaping:
		for i, r := range name {
			switch {
			case r == '_':
				b.WriteString("__")
			case r == '.':
				b.WriteString("_dot_")
			case legacyLabelRune(r, i):
				b.WriteRune(r)
			default:
				b.WriteString("__")
			}
		}
	case model.ValueEncodingEscaping:
		b.WriteString("U__")
		for i, r := range name {
			switch {
			case r == '_':
				b.WriteString("__")
			case legacyLabelRune(r, i):
				b.WriteRune(r)
			case !utf8.ValidRune(r):
				b.WriteString("_FFFD_")
			default:
				b.WriteByte('_')
				b.WriteString(strconv.FormatInt(int64(r), 16))
				b.WriteByte('_')
			}
		}
	default:
		return model.EscapeName(name, scheme)
	}
	return b.String()
}

// legacyLabelRune reports whether r, at byte offset i of a name, may stand
// there in a legacy label name.
func legacyLabelRune(r rune, i int) bool {
	return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || r == '_' || (r >= '0' && r <= '9' && i > 0)
}
