package exposition

import (
	"fmt"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
)

// ExemplarMaxRunes is the most code points the label names and values of
// one exemplar may hold together (OpenMetrics 1.0: "MUST NOT exceed 128").
const ExemplarMaxRunes = 128

// CheckExemplars returns an error naming the first exemplar of m that no
// OpenMetrics or protobuf scrape could carry: an empty label name (written
// as "", which no Prometheus takes for a label name) or one that is not
// UTF-8, a label value that is not UTF-8, two label names that are one name
// as written or under some escaping, or labels longer than
// ExemplarMaxRunes together. Exemplar label names follow the UTF-8 rules
// whatever the gateway's name rules: they are no part of a series, and
// scrapes escape them like any name (so "trace.id" is written trace_id
// under escaping=underscores). A metric without exemplars costs two nil
// checks.
func CheckExemplars(m *dto.Metric) error {
	return eachExemplar(m, checkExemplar)
}

// eachExemplar calls check for every exemplar of m (a counter's, a classic
// histogram's buckets', a native histogram's) and returns the first error,
// saying which exemplar it was.
func eachExemplar(m *dto.Metric, check func(*dto.Exemplar) error) error {
	if c := m.Counter; c != nil && c.Exemplar != nil {
		if err := check(c.Exemplar); err != nil {
			return fmt.Errorf("counter exemplar: %w", err)
		}
	}
	h := m.Histogram
	if h == nil {
		return nil
	}
	for _, b := range h.Bucket {
		if b.Exemplar != nil {
			if err := check(b.Exemplar); err != nil {
				return fmt.Errorf("exemplar of bucket le=%g: %w", b.GetUpperBound(), err)
			}
		}
	}
	for _, e := range h.Exemplars {
		if e != nil {
			if err := check(e); err != nil {
				return fmt.Errorf("native histogram exemplar: %w", err)
			}
		}
	}
	return nil
}

// checkExemplar checks one exemplar's labels (see CheckExemplars).
func checkExemplar(e *dto.Exemplar) error {
	runes := 0
	for i, lp := range e.Label {
		name, value := lp.GetName(), lp.GetValue()
		if !ValidLabelName(name, true) {
			return fmt.Errorf("invalid label name %s", QuoteLabelName(name))
		}
		if !utf8.ValidString(value) {
			return fmt.Errorf("label %s has a value that is not valid UTF-8", QuoteLabelName(name))
		}
		runes += utf8.RuneCountInString(name) + utf8.RuneCountInString(value)
		for _, prev := range e.Label[:i] {
			if err := sameLabelName(prev.GetName(), name); err != nil {
				return err
			}
		}
	}
	if runes > ExemplarMaxRunes {
		return fmt.Errorf("labels hold %d code points, over OpenMetrics' %d", runes, ExemplarMaxRunes)
	}
	return nil
}

// sameLabelName reports two exemplar label names that a scrape would write
// as one: equal, or equal under an escaping.
func sameLabelName(a, b string) error {
	if a == b {
		return fmt.Errorf("label %s appears twice", QuoteLabelName(a))
	}
	for _, s := range EscapingSchemes[1:] { // [0] writes names as they are
		if EscapeLabelName(a, s) == EscapeLabelName(b, s) {
			return fmt.Errorf("labels %s and %s are one name under escaping=%s", QuoteLabelName(a), QuoteLabelName(b), s)
		}
	}
	return nil
}
