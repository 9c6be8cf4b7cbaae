package otlp

import (
	"math"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// deltaHistogramRequest is one delta explicit histogram point with bounds
// 1 and 10, one observation in each bucket, and exemplars 0.5 (bucket 1)
// and 20 (+Inf).
func deltaHistogramRequest(start, end pcommon.Timestamp) pmetric.Metrics {
	md, ms := request("service.name", "exd")
	m := ms.AppendEmpty()
	m.SetName("wait")
	h := m.SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	pt := h.DataPoints().AppendEmpty()
	pt.SetStartTimestamp(start)
	pt.SetTimestamp(end)
	pt.SetCount(3)
	pt.SetSum(25.5)
	pt.ExplicitBounds().FromRaw([]float64{1, 10})
	pt.BucketCounts().FromRaw([]uint64{1, 1, 1})
	for _, v := range []float64{0.5, 20} {
		e := pt.Exemplars().AppendEmpty()
		e.SetTimestamp(end)
		e.SetDoubleValue(v)
		e.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	}
	return md
}

func TestADeltaHistogramsExemplarAboveItsTopBoundIsServedOnTheInfBucket(t *testing.T) {
	g := translateOne(t, deltaHistogramRequest(testStart, testTS), nil)
	if len(g.Deltas) != 1 {
		t.Fatalf("got %d delta families, want 1", len(g.Deltas))
	}
	acc, err := AddDeltas(nil, g.Deltas)
	if err != nil {
		t.Fatal(err)
	}
	if len(acc.Families) != 1 || len(acc.Families[0].GetMetric()) != 1 {
		t.Fatalf("accumulated families = %v, want one series", acc.Families)
	}
	h := acc.Families[0].GetMetric()[0].GetHistogram()
	if len(h.GetExemplars()) != 0 {
		t.Errorf("the served classic histogram carries a native exemplar list: %v", h.GetExemplars())
	}
	buckets := h.GetBucket()
	if len(buckets) != 3 {
		t.Fatalf("buckets = %v, want 1, 10 and +Inf", buckets)
	}
	if got := buckets[0].GetExemplar().GetValue(); got != 0.5 {
		t.Errorf("bucket le=1 exemplar = %v, want 0.5", got)
	}
	inf := buckets[2]
	if !math.IsInf(inf.GetUpperBound(), 1) || inf.GetCumulativeCount() != 3 || inf.GetExemplar().GetValue() != 20 {
		t.Errorf("+Inf bucket = %v, want count 3 with the exemplar 20", inf)
	}

	// A later window without exemplars keeps the last one seen; the
	// buckets still add up by bound.
	next := deltaHistogramRequest(testTS, pcommon.NewTimestampFromTime(testTS.AsTime().Add(1e9)))
	next.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Histogram().DataPoints().At(0).Exemplars().RemoveIf(func(pmetric.Exemplar) bool { return true })
	g2 := translateOne(t, next, nil)
	acc2, err := AddDeltas(acc.States, g2.Deltas)
	if err != nil {
		t.Fatal(err)
	}
	h2 := acc2.Families[0].GetMetric()[0].GetHistogram()
	if b := h2.GetBucket(); len(b) != 3 || b[1].GetCumulativeCount() != 4 || b[2].GetCumulativeCount() != 6 || b[2].GetExemplar().GetValue() != 20 {
		t.Errorf("after a second window the buckets are %v, want le=10 at 4, +Inf at 6 keeping the exemplar 20", b)
	}
}
