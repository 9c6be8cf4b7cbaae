package exposition

import (
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
)

// EscapeFamily returns mf with every name written as a scrape under scheme
// writes it (see escapeFamily), or mf itself when no name changes: under
// escaping=allow-utf-8, or when every name is a legacy one (LegacyNames).
// mf is not modified. It is for formats rendered from whole families, such
// as the protobuf text formats; AppendBody escapes by itself.
func EscapeFamily(mf *dto.MetricFamily, scheme model.EscapingScheme) *dto.MetricFamily {
	if scheme == model.NoEscaping || LegacyNames(mf) {
		return mf
	}
	return escapeFamily(mf, scheme)
}

// escapeFamily returns mf with every name written as a scrape under scheme
// writes it: the family name and __name__ label values by
// EscapeMetricName, label names and exemplar label names by
// EscapeLabelName. It replaces model.EscapeMetricFamily, which checks label
// names with the metric-name rule and so leaves a ':' in them, and never
// looks at exemplar labels. mf is not modified: metrics without a name to
// escape are shared, the others are shallow copies with new label slices
// (and copies of the values holding exemplars to escape), keeping their
// unknown fields for protobuf.
func escapeFamily(mf *dto.MetricFamily, scheme model.EscapingScheme) *dto.MetricFamily {
	out := &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Unit: mf.Unit, Metric: make([]*dto.Metric, len(mf.Metric))}
	if mf.Name != nil {
		out.Name = proto.String(EscapeMetricName(mf.GetName(), scheme))
	}
	for i, m := range mf.Metric {
		if legacyMetric(m) {
			out.Metric[i] = m
			continue
		}
		out.Metric[i] = escapeMetric(m, scheme)
	}
	return out
}

// escapeMetric returns a copy of m with its names escaped for scheme.
func escapeMetric(m *dto.Metric, scheme model.EscapingScheme) *dto.Metric {
	e := &dto.Metric{
		Label:       escapeLabels(m.Label, scheme, true),
		Gauge:       m.Gauge,
		Counter:     m.Counter,
		Summary:     m.Summary,
		Untyped:     m.Untyped,
		Histogram:   m.Histogram,
		TimestampMs: m.TimestampMs,
	}
	if u := m.ProtoReflect().GetUnknown(); len(u) > 0 {
		e.ProtoReflect().SetUnknown(u)
	}
	if legacyExemplars(m) {
		return e
	}
	if c := m.Counter; c != nil && c.Exemplar != nil {
		c = proto.Clone(c).(*dto.Counter)
		c.Exemplar.Label = escapeLabels(c.Exemplar.Label, scheme, false)
		e.Counter = c
	}
	if h := m.Histogram; h != nil {
		h = proto.Clone(h).(*dto.Histogram)
		for _, b := range h.Bucket {
			if b.Exemplar != nil {
				b.Exemplar.Label = escapeLabels(b.Exemplar.Label, scheme, false)
			}
		}
		for _, x := range h.Exemplars {
			if x != nil {
				x.Label = escapeLabels(x.Label, scheme, false)
			}
		}
		e.Histogram = h
	}
	return e
}

// escapeLabels returns labels with their names escaped for scheme, sharing
// the pairs that need no change; with series set, a __name__ label's value
// is escaped as a metric name.
func escapeLabels(labels []*dto.LabelPair, scheme model.EscapingScheme, series bool) []*dto.LabelPair {
	if len(labels) == 0 {
		return labels
	}
	out := make([]*dto.LabelPair, len(labels))
	for i, lp := range labels {
		name := lp.GetName()
		switch {
		case series && name == model.MetricNameLabel:
			if v := lp.GetValue(); !legacyName(v) && lp.Value != nil {
				out[i] = &dto.LabelPair{Name: lp.Name, Value: proto.String(EscapeMetricName(v, scheme))}
				continue
			}
		case !legacyLabelName(name) && lp.Name != nil:
			out[i] = &dto.LabelPair{Name: proto.String(EscapeLabelName(name, scheme)), Value: lp.Value}
			continue
		}
		out[i] = lp
	}
	return out
}
