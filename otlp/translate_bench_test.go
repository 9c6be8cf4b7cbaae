package otlp

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/pushgate/pushgate/bench/payload"
)

// benchRequest builds the OTLP request equivalent to the bench payload's
// push: the same 8 families (3 cumulative monotonic sums, 3 gauges, an
// explicit histogram and a summary), their 42 points and 74 samples, under
// one resource as an SDK sends it.
func benchRequest(tb testing.TB) pmetric.Metrics {
	tb.Helper()
	ts := pcommon.NewTimestampFromTime(testNow.Add(-time.Minute))
	start := pcommon.NewTimestampFromTime(testNow.Add(-time.Hour))
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	ra := rm.Resource().Attributes()
	ra.PutStr("service.name", payload.Job)
	ra.PutStr("service.instance.id", "6f1c1b7e-2f55-4c1e-9d0b-3f3c3f7f2a11")
	ra.PutStr("telemetry.sdk.language", "go")
	ra.PutStr("telemetry.sdk.name", "opentelemetry")
	ra.PutStr("telemetry.sdk.version", "1.38.0")
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("bench")
	for _, mf := range payload.Families(0, 1) {
		m := sm.Metrics().AppendEmpty()
		m.SetName(mf.GetName())
		m.SetDescription(mf.GetHelp())
		attrs := func(dst pcommon.Map, lps []*dto.LabelPair) {
			for _, lp := range lps {
				dst.PutStr(lp.GetName(), lp.GetValue())
			}
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			s := m.SetEmptySum()
			s.SetIsMonotonic(true)
			s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			for _, x := range mf.Metric {
				dp := s.DataPoints().AppendEmpty()
				dp.SetStartTimestamp(start)
				dp.SetTimestamp(ts)
				dp.SetDoubleValue(x.GetCounter().GetValue())
				attrs(dp.Attributes(), x.Label)
			}
		case dto.MetricType_GAUGE:
			g := m.SetEmptyGauge()
			for _, x := range mf.Metric {
				dp := g.DataPoints().AppendEmpty()
				dp.SetTimestamp(ts)
				dp.SetDoubleValue(x.GetGauge().GetValue())
				attrs(dp.Attributes(), x.Label)
			}
		case dto.MetricType_HISTOGRAM:
			h := m.SetEmptyHistogram()
			h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			for _, x := range mf.Metric {
				dp := h.DataPoints().AppendEmpty()
				dp.SetStartTimestamp(start)
				dp.SetTimestamp(ts)
				xh := x.GetHistogram()
				var prev uint64
				for _, b := range xh.Bucket {
					dp.ExplicitBounds().Append(b.GetUpperBound())
					dp.BucketCounts().Append(b.GetCumulativeCount() - prev)
					prev = b.GetCumulativeCount()
				}
				dp.BucketCounts().Append(xh.GetSampleCount() - prev)
				dp.SetCount(xh.GetSampleCount())
				dp.SetSum(xh.GetSampleSum())
				attrs(dp.Attributes(), x.Label)
			}
		case dto.MetricType_SUMMARY:
			s := m.SetEmptySummary()
			for _, x := range mf.Metric {
				dp := s.DataPoints().AppendEmpty()
				dp.SetStartTimestamp(start)
				dp.SetTimestamp(ts)
				xs := x.GetSummary()
				for _, q := range xs.Quantile {
					qv := dp.QuantileValues().AppendEmpty()
					qv.SetQuantile(q.GetQuantile())
					qv.SetValue(q.GetValue())
				}
				dp.SetCount(xs.GetSampleCount())
				dp.SetSum(xs.GetSampleSum())
				attrs(dp.Attributes(), x.Label)
			}
		}
	}
	return md
}

func TestTheBenchRequestTranslatesToTheBenchPayload(t *testing.T) {
	g := translateOne(t, benchRequest(t), nil)
	if g.Rejected != 0 {
		t.Fatalf("rejected %d: %s", g.Rejected, g.Reason)
	}
	want := payload.Families(0, 1)
	// The payload's families plus target_info (the resource has
	// non-identifying attributes).
	if len(g.Families) != len(want)+1 {
		t.Fatalf("families %s", familyNames(g))
	}
	samples := 0
	for i, mf := range want {
		got := g.Families[i]
		if got.GetName() != mf.GetName() || got.GetType() != mf.GetType() || len(got.Metric) != len(mf.Metric) {
			t.Errorf("family %d: %s %v ×%d, want %s %v ×%d", i, got.GetName(), got.GetType(), len(got.Metric), mf.GetName(), mf.GetType(), len(mf.Metric))
			continue
		}
		for j, m := range mf.Metric {
			if a, b := labelString(got.Metric[j]), labelString(m); a != b {
				t.Errorf("%s series %d: labels %s, want %s", mf.GetName(), j, a, b)
			}
			switch mf.GetType() {
			case dto.MetricType_HISTOGRAM:
				samples += len(got.Metric[j].Histogram.Bucket) + 3
			case dto.MetricType_SUMMARY:
				samples += len(got.Metric[j].Summary.Quantile) + 2
			default:
				samples++
			}
		}
	}
	if samples != payload.SampleCount() {
		t.Errorf("%d samples, want %d", samples, payload.SampleCount())
	}
}

// BenchmarkTranslate translates the bench payload's request (74 samples).
func BenchmarkTranslate(b *testing.B) {
	md := benchRequest(b)
	tr, err := NewTranslator(Settings{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tr.Translate(md, nil, testNow); err != nil {
			b.Fatal(err)
		}
	}
}
