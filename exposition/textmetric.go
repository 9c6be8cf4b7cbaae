package exposition

// How the text parser carves dto metrics out of its arenas: one metric per
// series (a summary or histogram collects its lines by label signature),
// and each sample value stored the way expfmt stores it for the family's
// type.

import (
	"hash/maphash"
	"math"

	dto "github.com/prometheus/client_model/go"
)

// countSeries counts one more series and fails once there are more than
// the limit.
func (p *textParser) countSeries() error {
	p.series++
	if p.maxSeries > 0 && p.series > p.maxSeries {
		return &seriesLimitError{max: p.maxSeries}
	}
	return nil
}

// signature hashes the labels of the current line, in any order.
func (p *textParser) signature() uint64 {
	var sum uint64
	for _, l := range p.labels {
		var h maphash.Hash
		h.SetSeed(p.seed)
		h.WriteString(l.name)
		h.WriteByte(0xff)
		h.WriteString(l.value)
		sum += h.Sum64()
	}
	return sum
}

// sameLabels reports whether pairs and labels hold the same label set.
func sameLabels(pairs []*dto.LabelPair, labels []textLabel) bool {
	if len(pairs) != len(labels) {
		return false
	}
next:
	for _, l := range labels {
		for _, lp := range pairs {
			if lp.GetName() == l.name {
				if lp.GetValue() != l.value {
					return false
				}
				continue next
			}
		}
		return false
	}
	return true
}

// newMetric returns a metric holding the labels of the current line.
func (p *textParser) newMetric() *dto.Metric {
	hint := p.linesLeft + 1
	m := p.metrics.next(hint)
	if len(p.labels) == 0 {
		return m
	}
	m.Label = p.labelPtrs.slice(len(p.labels), hint*len(p.labels))
	for k, l := range p.labels {
		// The strings live in the box: pointing at the loop variable's
		// fields made it escape, one allocation per label.
		b := p.labelPairs.next(hint * len(p.labels))
		b.name, b.value = l.name, l.value
		b.lp.Name, b.lp.Value = &b.name, &b.value
		m.Label[k] = &b.lp
	}
	return m
}

// setValue stores a sample's value in its metric the way expfmt does for
// the family's type; role and bound say which part of a summary or
// histogram the line holds.
func (p *textParser) setValue(f *textFamily, m *dto.Metric, role sampleRole, bound, value float64) (valueRef, error) {
	hint := p.linesLeft + 1
	switch f.typ {
	case dto.MetricType_COUNTER:
		b := p.counters.next(hint)
		b.v = value
		b.c.Value = &b.v
		m.Counter = &b.c
		return valueRef{f: &b.v}, nil
	case dto.MetricType_GAUGE:
		b := p.gauges.next(hint)
		b.v = value
		b.g.Value = &b.v
		m.Gauge = &b.g
		return valueRef{f: &b.v}, nil
	case dto.MetricType_UNTYPED:
		b := p.untypeds.next(hint)
		b.v = value
		b.u.Value = &b.v
		m.Untyped = &b.u
		return valueRef{f: &b.v}, nil
	case dto.MetricType_SUMMARY:
		if m.Summary == nil {
			m.Summary = p.summaries.next(hint)
		}
		switch {
		case role == roleCount:
			m.Summary.SampleCount = p.uints.next(hint)
			*m.Summary.SampleCount = uint64(value)
			return valueRef{u: m.Summary.SampleCount}, nil
		case role == roleSum:
			m.Summary.SampleSum = p.floats.next(hint)
			*m.Summary.SampleSum = value
			return valueRef{f: m.Summary.SampleSum}, nil
		case !math.IsNaN(bound):
			q := p.quantiles.next(hint)
			q.quantile, q.vl = bound, value
			q.q.Quantile, q.q.Value = &q.quantile, &q.vl
			m.Summary.Quantile = append(m.Summary.Quantile, &q.q)
			return valueRef{f: &q.vl}, nil
		}
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		if m.Histogram == nil {
			m.Histogram = p.histograms.next(hint)
		}
		h := m.Histogram
		switch {
		case role == roleCount:
			if u := uint64(value); value == float64(u) {
				h.SampleCount = p.uints.next(hint)
				*h.SampleCount = u
				return valueRef{u: h.SampleCount}, nil
			}
			if value < 0 {
				return valueRef{}, p.errorf("negative count for histogram %q", f.name)
			}
			h.SampleCountFloat = p.floats.next(hint)
			*h.SampleCountFloat = value
			return valueRef{f: h.SampleCountFloat}, nil
		case role == roleSum:
			h.SampleSum = p.floats.next(hint)
			*h.SampleSum = value
			return valueRef{f: h.SampleSum}, nil
		case !math.IsNaN(bound):
			b := p.buckets.next(hint)
			b.upper = bound
			b.b.UpperBound = &b.upper
			if u := uint64(value); value == float64(u) {
				b.count = u
				b.b.CumulativeCount = &b.count
			} else {
				if value < 0 {
					return valueRef{}, p.errorf("negative bucket population for histogram %q", f.name)
				}
				b.countFloat = value
				b.b.CumulativeCountFloat = &b.countFloat
			}
			h.Bucket = append(h.Bucket, &b.b)
			if b.b.CumulativeCount != nil {
				return valueRef{u: &b.count}, nil
			}
			return valueRef{f: &b.countFloat}, nil
		}
	}
	return valueRef{}, nil
}

// normalizeHistogram makes the counts of a histogram all integers or all
// floats, as expfmt does after parsing.
func normalizeHistogram(h *dto.Histogram) {
	if h == nil {
		return
	}
	anyFloats := h.GetSampleCountFloat() != 0
	for _, b := range h.GetBucket() {
		anyFloats = anyFloats || b.GetCumulativeCountFloat() != 0
	}
	if !anyFloats {
		return
	}
	if h.GetSampleCountFloat() == 0 {
		v := float64(h.GetSampleCount())
		h.SampleCountFloat, h.SampleCount = &v, nil
	}
	for _, b := range h.GetBucket() {
		if b.GetCumulativeCountFloat() == 0 {
			v := float64(b.GetCumulativeCount())
			b.CumulativeCountFloat, b.CumulativeCount = &v, nil
		}
	}
}
