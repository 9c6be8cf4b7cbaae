package oracle

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// The escapings a scrape can ask for with escaping=, in the order scrapes
// of this test name them.
var escapings = []model.EscapingScheme{
	model.NoEscaping,
	model.UnderscoreEscaping,
	model.DotsEscaping,
	model.ValueEncodingEscaping,
}

// legacyMetricName reports whether name needs no quoting in the text
// formats and no escaping: [a-zA-Z_:][a-zA-Z0-9_:]*.
func legacyMetricName(name string) bool {
	return model.LegacyValidation.IsValidMetricName(name)
}

// legacyLabelName reports whether name is a label name every scraper
// accepts: [a-zA-Z_][a-zA-Z0-9_]*. Unlike metric names, ':' is not allowed.
func legacyLabelName(name string) bool {
	return model.LegacyValidation.IsValidLabelName(name)
}

// escapeMetricName is the metric name a scrape under scheme must show for
// name: legacy names unchanged (as expfmt's EscapeMetricFamily does, under
// every scheme), others escaped by model.EscapeName.
func escapeMetricName(name string, scheme model.EscapingScheme) string {
	if scheme == model.NoEscaping || legacyMetricName(name) {
		return name
	}
	return model.EscapeName(name, scheme)
}

// escapeLabelName is the label name a scrape under scheme must show for
// name: legacy label names unchanged, others escaped by model.EscapeName's
// rules applied to the label alphabet, in which ':' must be escaped too.
func escapeLabelName(name string, scheme model.EscapingScheme) string {
	if scheme == model.NoEscaping || name == "" || legacyLabelName(name) {
		return name
	}
	valid := func(r rune, i int) bool {
		return r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9' && i > 0)
	}
	var b strings.Builder
	switch scheme {
	case model.UnderscoreEscaping:
		for i, r := range name {
			if valid(r, i) {
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
			case valid(r, i):
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
			case valid(r, i):
				b.WriteRune(r)
			case !utf8.ValidRune(r):
				b.WriteString("_FFFD_")
			default:
				b.WriteString("_" + strconv.FormatInt(int64(r), 16) + "_")
			}
		}
	}
	return b.String()
}

// valueEncodeLabelName writes name the way clients put a UTF-8 label name
// into a push path (the "U__" value encoding). Legacy names stay as they are.
func valueEncodeLabelName(name string) string {
	if legacyLabelName(name) {
		return name
	}
	return escapeLabelName(name, model.ValueEncodingEscaping)
}

// quoteName writes a metric or label name for a message: bare when legacy,
// quoted otherwise.
func quoteName(name string, metric bool) string {
	if (metric && legacyMetricName(name)) || (!metric && legacyLabelName(name)) {
		return name
	}
	return strconv.Quote(name)
}

// identity renders a series the way Prometheus identifies it: the metric
// name and the labels with a non-empty value, sorted by name.
func identity(ls labels.Labels) string {
	var name string
	type pair struct{ n, v string }
	var pairs []pair
	ls.Range(func(l labels.Label) {
		if l.Name == model.MetricNameLabel {
			name = l.Value
			return
		}
		if l.Value == "" {
			return
		}
		pairs = append(pairs, pair{l.Name, l.Value})
	})
	sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].n < pairs[j].n })
	var b strings.Builder
	b.WriteString(quoteName(name, true))
	b.WriteByte('{')
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quoteName(p.n, false))
		b.WriteByte('=')
		b.WriteString(strconv.Quote(p.v))
	}
	b.WriteByte('}')
	return b.String()
}

// labelsOf returns the value of every label but the metric name, for
// looking up grouping labels.
func labelsOf(ls labels.Labels) map[string]string {
	m := make(map[string]string, ls.Len())
	ls.Range(func(l labels.Label) {
		if l.Name != model.MetricNameLabel {
			m[l.Name] = l.Value
		}
	})
	return m
}

// keyIdentity renders a grouping key the way its push_time_seconds series
// is identified: labels with a non-empty value, sorted.
func keyIdentity(key map[string]string) string {
	names := make([]string, 0, len(key))
	for n, v := range key {
		if v != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quoteName(n, false))
		b.WriteByte('=')
		b.WriteString(strconv.Quote(key[n]))
	}
	b.WriteByte('}')
	return b.String()
}

// keyString renders a grouping key exactly, empty values included.
func keyString(key map[string]string) string {
	names := make([]string, 0, len(key))
	for n := range key {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quoteName(n, false))
		b.WriteByte('=')
		b.WriteString(strconv.Quote(key[n]))
	}
	b.WriteByte('}')
	return b.String()
}
