package oracle

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// otlpShrinkBudget bounds the shrinking of one difference.
const (
	otlpShrinkTime   = 20 * time.Second
	otlpShrinkTrials = 150
)

// shrinkOTLP replays f's request alone on a fresh gateway; when that shows
// the same class of difference, it removes resources, scopes, metrics and
// points one at a time for as long as the difference stays, and returns
// the smallest request and its failure.
func shrinkOTLP(ctx context.Context, bin string, setup otlpSetup, f *otlpFailure) (pmetric.Metrics, *otlpFailure, bool) {
	fails := func(md pmetric.Metrics) *otlpFailure {
		got, _, err := replayOTLP(ctx, bin, setup, []pmetric.Metrics{md}, []otlpWire{f.wire})
		if err != nil || got == nil || got.class != f.class {
			return nil
		}
		return got
	}
	cur := f.request
	last := fails(cur)
	if last == nil {
		return cur, nil, false
	}
	deadline := time.Now().Add(otlpShrinkTime)
	trials := 0
	for progress := true; progress; {
		progress = false
		for _, cand := range otlpCandidates(cur) {
			if trials >= otlpShrinkTrials || time.Now().After(deadline) {
				return cur, last, true
			}
			trials++
			if got := fails(cand); got != nil {
				cur, last, progress = cand, got, true
				break
			}
		}
	}
	return cur, last, true
}

// otlpCandidates returns copies of md with one part removed, the largest
// parts first: a resource, a scope, a metric, a point.
func otlpCandidates(md pmetric.Metrics) []pmetric.Metrics {
	var out []pmetric.Metrics
	without := func(edit func(pmetric.Metrics)) {
		c := pmetric.NewMetrics()
		md.CopyTo(c)
		edit(c)
		out = append(out, c)
	}
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		without(func(c pmetric.Metrics) { removeAt(c.ResourceMetrics().RemoveIf, i) })
	}
	for i := range rms.Len() {
		for j := range rms.At(i).ScopeMetrics().Len() {
			without(func(c pmetric.Metrics) { removeAt(c.ResourceMetrics().At(i).ScopeMetrics().RemoveIf, j) })
		}
	}
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			for k := range sms.At(j).Metrics().Len() {
				without(func(c pmetric.Metrics) {
					removeAt(c.ResourceMetrics().At(i).ScopeMetrics().At(j).Metrics().RemoveIf, k)
				})
			}
		}
	}
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				for p := range pointCount(ms.At(k)) {
					without(func(c pmetric.Metrics) {
						removePoint(c.ResourceMetrics().At(i).ScopeMetrics().At(j).Metrics().At(k), p)
					})
				}
			}
		}
	}
	return out
}

// removeAt calls a pdata RemoveIf to drop element i.
func removeAt[T any](removeIf func(func(T) bool), i int) {
	n := 0
	removeIf(func(T) bool {
		n++
		return n-1 == i
	})
}

// pointCount returns the number of points of m.
func pointCount(m pmetric.Metric) int {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints().Len()
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints().Len()
	case pmetric.MetricTypeHistogram:
		return m.Histogram().DataPoints().Len()
	case pmetric.MetricTypeExponentialHistogram:
		return m.ExponentialHistogram().DataPoints().Len()
	case pmetric.MetricTypeSummary:
		return m.Summary().DataPoints().Len()
	}
	return 0
}

// removePoint drops point p of m.
func removePoint(m pmetric.Metric, p int) {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		removeAt(m.Gauge().DataPoints().RemoveIf, p)
	case pmetric.MetricTypeSum:
		removeAt(m.Sum().DataPoints().RemoveIf, p)
	case pmetric.MetricTypeHistogram:
		removeAt(m.Histogram().DataPoints().RemoveIf, p)
	case pmetric.MetricTypeExponentialHistogram:
		removeAt(m.ExponentialHistogram().DataPoints().RemoveIf, p)
	case pmetric.MetricTypeSummary:
		removeAt(m.Summary().DataPoints().RemoveIf, p)
	}
}
