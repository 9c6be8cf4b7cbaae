package otlp

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// addExponential adds an exponential histogram with one point.
func addExponential(ms pmetric.MetricSlice, name string, scale int32, offset int32, pos []uint64, negOffset int32, neg []uint64, zero uint64) pmetric.ExponentialHistogramDataPoint {
	m := ms.AppendEmpty()
	m.SetName(name)
	h := m.SetEmptyExponentialHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := h.DataPoints().AppendEmpty()
	dp.SetStartTimestamp(testStart)
	dp.SetTimestamp(testTS)
	dp.SetScale(scale)
	dp.Positive().SetOffset(offset)
	dp.Positive().BucketCounts().FromRaw(pos)
	dp.Negative().SetOffset(negOffset)
	dp.Negative().BucketCounts().FromRaw(neg)
	dp.SetZeroCount(zero)
	total := zero
	for _, c := range append(append([]uint64{}, pos...), neg...) {
		total += c
	}
	dp.SetCount(total)
	dp.SetSum(10)
	return dp
}

type spanWant struct {
	offset int32
	length uint32
}

func spansOf(ss []*dto.BucketSpan) []spanWant {
	var out []spanWant
	for _, s := range ss {
		out = append(out, spanWant{s.GetOffset(), s.GetLength()})
	}
	return out
}

func equalSlices[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestExponentialHistogramsAreNativeHistograms(t *testing.T) {
	cases := []struct {
		name      string
		scale     int32
		offset    int32
		counts    []uint64
		schema    int32
		spans     []spanWant
		deltas    []int64
		negSpans  []spanWant
		negDeltas []int64
		negOffset int32
		neg       []uint64
	}{
		{name: "indexes shift by one", scale: 3, offset: 0, counts: []uint64{1, 2, 3}, schema: 3,
			spans: []spanWant{{1, 3}}, deltas: []int64{1, 1, 1}},
		{name: "a gap of two buckets is filled", scale: 0, offset: -2, counts: []uint64{4, 0, 0, 1}, schema: 0,
			spans: []spanWant{{-1, 4}}, deltas: []int64{4, -4, 0, 1}},
		{name: "a gap of three buckets starts a spanWant", scale: 0, offset: 5, counts: []uint64{1, 0, 0, 0, 2}, schema: 0,
			spans: []spanWant{{6, 1}, {3, 1}}, deltas: []int64{1, 1}},
		{name: "leading empty buckets leave an empty first spanWant", scale: 0, offset: 0, counts: []uint64{0, 0, 0, 0, 5}, schema: 0,
			spans: []spanWant{{1, 0}, {4, 1}}, deltas: []int64{5}},
		{name: "a scale above 8 merges buckets down to 8", scale: 10, offset: 1, counts: []uint64{1, 1, 1, 1, 1}, schema: 8,
			spans: []spanWant{{1, 2}}, deltas: []int64{3, -1}},
		{name: "negative buckets are laid out alike", scale: 1, offset: 0, counts: []uint64{1}, schema: 1,
			spans: []spanWant{{1, 1}}, deltas: []int64{1}, negOffset: -3, neg: []uint64{2, 2}, negSpans: []spanWant{{-2, 2}}, negDeltas: []int64{2, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			md, ms := request("service.name", "svc")
			addExponential(ms, "latency", c.scale, c.offset, c.counts, c.negOffset, c.neg, 1)
			g := translateOne(t, md, nil)
			if g.Rejected != 0 {
				t.Fatalf("rejected: %s", g.Reason)
			}
			h := family(t, g, "latency").Metric[0].GetHistogram()
			if h.GetSchema() != c.schema || h.GetZeroThreshold() != 1e-128 || h.GetZeroCount() != 1 || h.GetSampleSum() != 10 {
				t.Errorf("schema %d zero threshold %g zero count %d sum %v", h.GetSchema(), h.GetZeroThreshold(), h.GetZeroCount(), h.GetSampleSum())
			}
			if got := spansOf(h.PositiveSpan); !equalSlices(got, c.spans) || !equalSlices(h.PositiveDelta, c.deltas) {
				t.Errorf("positive %v %v, want %v %v", got, h.PositiveDelta, c.spans, c.deltas)
			}
			if got := spansOf(h.NegativeSpan); !equalSlices(got, c.negSpans) || !equalSlices(h.NegativeDelta, c.negDeltas) {
				t.Errorf("negative %v %v, want %v %v", got, h.NegativeDelta, c.negSpans, c.negDeltas)
			}
			if !h.GetCreatedTimestamp().AsTime().Equal(testStart.AsTime()) {
				t.Errorf("created %v", h.GetCreatedTimestamp())
			}
		})
	}
}

func TestNativeHistogramsKeepEveryExemplarInTimeOrder(t *testing.T) {
	md, ms := request("service.name", "svc")
	dp := addExponential(ms, "latency", 0, 0, []uint64{1}, 0, nil, 0)
	addExemplar(dp.Exemplars(), 2, testTS)
	addExemplar(dp.Exemplars(), 1, testStart)
	g := translateOne(t, md, nil)
	exs := family(t, g, "latency").Metric[0].GetHistogram().Exemplars
	if len(exs) != 2 || exs[0].GetValue() != 1 || exs[1].GetValue() != 2 {
		t.Errorf("exemplars %v", exs)
	}
}

func TestBadExponentialPointsAreRefused(t *testing.T) {
	cases := []struct {
		name   string
		mod    func(dp pmetric.ExponentialHistogramDataPoint)
		reason string
	}{
		{"a scale below -4", func(dp pmetric.ExponentialHistogramDataPoint) { dp.SetScale(-5) }, "scale -5 is below -4"},
		{"buckets that do not add up to the count", func(dp pmetric.ExponentialHistogramDataPoint) { dp.SetCount(9) }, "not its count 9"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			md, ms := request("service.name", "svc")
			c.mod(addExponential(ms, "e", 0, 0, []uint64{1, 2}, 0, nil, 0))
			g := translateOne(t, md, nil)
			if g.Rejected != 1 || !strings.Contains(g.Reason, c.reason) {
				t.Errorf("rejected %d, reason %q, want %q", g.Rejected, g.Reason, c.reason)
			}
		})
	}
}
