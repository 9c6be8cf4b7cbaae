package otlp

import (
	"math"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// addHistogram adds an explicit histogram metric with one point.
func addHistogram(ms pmetric.MetricSlice, name, unit string, temp pmetric.AggregationTemporality, bounds []float64, counts []uint64, sum float64, attrs ...string) pmetric.HistogramDataPoint {
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	h := m.SetEmptyHistogram()
	h.SetAggregationTemporality(temp)
	dp := h.DataPoints().AppendEmpty()
	dp.SetStartTimestamp(testStart)
	dp.SetTimestamp(testTS)
	dp.ExplicitBounds().FromRaw(bounds)
	dp.BucketCounts().FromRaw(counts)
	var total uint64
	for _, c := range counts {
		total += c
	}
	dp.SetCount(total)
	dp.SetSum(sum)
	putAttrs(dp.Attributes(), attrs...)
	return dp
}

func addExemplar(es pmetric.ExemplarSlice, v float64, at pcommon.Timestamp) {
	e := es.AppendEmpty()
	e.SetDoubleValue(v)
	e.SetTimestamp(at)
}

func TestClassicHistograms(t *testing.T) {
	md, ms := request("service.name", "svc")
	dp := addHistogram(ms, "http.server.duration", "s", pmetric.AggregationTemporalityCumulative, []float64{0.1, 1, math.Inf(1)}, []uint64{1, 2, 3, 4}, 9.5, "le", "x", "route", "/a")
	addExemplar(dp.Exemplars(), 0.05, testTS)
	addExemplar(dp.Exemplars(), 0.5, testTS)
	addExemplar(dp.Exemplars(), 50, testTS)
	g := translateOne(t, md, nil)
	mf := family(t, g, "http_server_duration_seconds")
	if len(mf.Metric) != 1 || labelString(mf.Metric[0]) != `{route="/a"}` {
		t.Fatalf("series %v", mf.Metric)
	}
	h := mf.Metric[0].GetHistogram()
	if h.GetSampleCount() != 10 || h.GetSampleSum() != 9.5 || !h.GetCreatedTimestamp().AsTime().Equal(testStart.AsTime()) {
		t.Errorf("count %d sum %v created %v", h.GetSampleCount(), h.GetSampleSum(), h.GetCreatedTimestamp())
	}
	// The explicit +Inf bound is left out; a +Inf bucket carries the
	// exemplar above every bound.
	want := []struct {
		le  float64
		cum uint64
		ex  float64
	}{{0.1, 1, 0.05}, {1, 3, 0.5}, {math.Inf(1), 10, 50}}
	if len(h.Bucket) != len(want) {
		t.Fatalf("%d buckets", len(h.Bucket))
	}
	for i, w := range want {
		b := h.Bucket[i]
		if b.GetUpperBound() != w.le || b.GetCumulativeCount() != w.cum || b.GetExemplar().GetValue() != w.ex {
			t.Errorf("bucket %d: le %v cum %d exemplar %v, want %+v", i, b.GetUpperBound(), b.GetCumulativeCount(), b.GetExemplar(), w)
		}
	}
}

func TestAHistogramWithoutBucketsHasOnlyItsCount(t *testing.T) {
	md, ms := request("service.name", "svc")
	dp := addHistogram(ms, "h", "", pmetric.AggregationTemporalityCumulative, nil, nil, 2)
	dp.SetCount(3)
	g := translateOne(t, md, nil)
	h := family(t, g, "h").Metric[0].GetHistogram()
	if len(h.Bucket) != 0 || h.GetSampleCount() != 3 {
		t.Errorf("histogram %v", h)
	}
}

func TestAHistogramWithoutSumHasNoSum(t *testing.T) {
	md, ms := request("service.name", "svc")
	dp := addHistogram(ms, "h", "", pmetric.AggregationTemporalityCumulative, []float64{1}, []uint64{1, 1}, 0)
	dp.RemoveSum()
	g := translateOne(t, md, nil)
	if h := family(t, g, "h").Metric[0].GetHistogram(); h.SampleSum != nil {
		t.Errorf("sum %v", h.GetSampleSum())
	}
}

func TestDeltaHistogramsKeepTheirBoundsOnly(t *testing.T) {
	md, ms := request("service.name", "svc")
	dp := addHistogram(ms, "h", "", pmetric.AggregationTemporalityDelta, []float64{1}, []uint64{1, 1}, 3)
	addExemplar(dp.Exemplars(), 5, testTS)
	g := translateOne(t, md, nil)
	if len(g.Deltas) != 1 {
		t.Fatalf("families %s", familyNames(g))
	}
	h := g.Deltas[0].Family.Metric[0].GetHistogram()
	if len(h.Bucket) != 1 || h.CreatedTimestamp != nil || h.GetSampleCount() != 2 {
		t.Errorf("delta histogram %v", h)
	}
}

func TestBadHistogramPointsAreRefused(t *testing.T) {
	cases := []struct {
		name   string
		mod    func(dp pmetric.HistogramDataPoint)
		reason string
	}{
		{"more counts than bounds allow", func(dp pmetric.HistogramDataPoint) { dp.BucketCounts().Append(0) }, "3 bucket counts for 1 explicit bounds"},
		{"bounds without counts", func(dp pmetric.HistogramDataPoint) { dp.BucketCounts().FromRaw(nil) }, "0 bucket counts for 1 explicit bounds"},
		{"counts that do not add up to the count", func(dp pmetric.HistogramDataPoint) { dp.SetCount(7) }, "add up to 2, not to its count 7"},
		{"a NaN bound", func(dp pmetric.HistogramDataPoint) { dp.ExplicitBounds().FromRaw([]float64{math.NaN()}) }, "NaN bucket bound"},
		{"decreasing bounds", func(dp pmetric.HistogramDataPoint) {
			dp.ExplicitBounds().FromRaw([]float64{2, 1})
			dp.BucketCounts().FromRaw([]uint64{1, 1, 0})
		}, "not increasing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			md, ms := request("service.name", "svc")
			c.mod(addHistogram(ms, "h", "", pmetric.AggregationTemporalityCumulative, []float64{1}, []uint64{1, 1}, 3))
			g := translateOne(t, md, nil)
			if g.Rejected != 1 || !strings.Contains(g.Reason, c.reason) || !strings.HasPrefix(g.Reason, `metric "h": `) {
				t.Errorf("rejected %d, reason %q, want %q", g.Rejected, g.Reason, c.reason)
			}
			for _, mf := range g.Families {
				if mf.GetName() == "h" {
					t.Errorf("family h stored: %v", mf)
				}
			}
		})
	}
}
