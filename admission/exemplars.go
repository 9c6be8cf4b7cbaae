package admission

import (
	"fmt"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/exposition"
)

// checkExemplars returns an error naming the first exemplar of m that no
// OpenMetrics or protobuf scrape could carry: an empty label name (written
// as "", which no Prometheus takes for a label name) or one that is not
// UTF-8, a label value that is not UTF-8, two label names that are one name
// as written or under some escaping, or labels longer than
// exposition.ExemplarMaxRunes together. Exemplar label names follow the UTF-8 rules
// whatever the gateway's name rules: they are no part of a series, and
// scrapes escape them like any name (so "trace.id" is written trace_id
// under escaping=underscores). A metric without exemplars costs two nil
// checks.
func checkExemplars(m *dto.Metric) error {
	return exposition.EachExemplar(m, checkExemplar)
}

// checkExemplar checks one exemplar's labels (see checkExemplars).
func checkExemplar(e *dto.Exemplar) error {
	runes := 0
	for i, lp := range e.Label {
		name, value := lp.GetName(), lp.GetValue()
		if !exposition.ValidLabelName(name, true) {
			return fmt.Errorf("invalid label name %s", exposition.QuoteLabelName(name))
		}
		if !utf8.ValidString(value) {
			return fmt.Errorf("label %s has a value that is not valid UTF-8", exposition.QuoteLabelName(name))
		}
		runes += utf8.RuneCountInString(name) + utf8.RuneCountInString(value)
		for _, prev := range e.Label[:i] {
			if err := sameLabelName(prev.GetName(), name); err != nil {
				return err
			}
		}
	}
	if runes > exposition.ExemplarMaxRunes {
		return fmt.Errorf("labels hold %d code points, over OpenMetrics' %d", runes, exposition.ExemplarMaxRunes)
	}
	return nil
}

// sameLabelName reports two exemplar label names that a scrape would write
// as one: equal, or equal under an escaping.
func sameLabelName(a, b string) error {
	if a == b {
		return fmt.Errorf("label %s appears twice", exposition.QuoteLabelName(a))
	}
	for _, s := range exposition.EscapingSchemes[1:] { // [0] writes names as they are
		if exposition.EscapeLabelName(a, s) == exposition.EscapeLabelName(b, s) {
			return fmt.Errorf("labels %s and %s are one name under escaping=%s", exposition.QuoteLabelName(a), exposition.QuoteLabelName(b), s)
		}
	}
	return nil
}
