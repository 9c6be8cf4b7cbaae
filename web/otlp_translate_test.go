package web

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/limits"
	"github.com/pushgate/pushgate/otlp"
	"github.com/pushgate/pushgate/store"
)

// deltaHistograms builds a request for job with one delta explicit
// histogram (bounds 1, 2; counts per bucket) and one delta exponential
// histogram at scale (positive buckets from offset 0), over the window
// (start, end] seconds before now.
func deltaHistograms(job string, counts []uint64, scale int32, expCounts []uint64, start, end time.Duration) pmetric.Metrics {
	now := time.Now()
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", job)
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	h := ms.AppendEmpty()
	h.SetName("work.duration")
	h.SetUnit("s")
	h.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	p := h.Histogram().DataPoints().AppendEmpty()
	p.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-start)))
	p.SetTimestamp(pcommon.NewTimestampFromTime(now.Add(-end)))
	p.ExplicitBounds().FromRaw([]float64{1, 2})
	p.BucketCounts().FromRaw(counts)
	var n uint64
	for _, c := range counts {
		n += c
	}
	p.SetCount(n)
	p.SetSum(float64(n))
	e := ms.AppendEmpty()
	e.SetName("work.size")
	e.SetUnit("By")
	e.SetEmptyExponentialHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	ep := e.ExponentialHistogram().DataPoints().AppendEmpty()
	ep.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-start)))
	ep.SetTimestamp(pcommon.NewTimestampFromTime(now.Add(-end)))
	ep.SetScale(scale)
	ep.Positive().BucketCounts().FromRaw(expCounts)
	n = 0
	for _, c := range expCounts {
		n += c
	}
	ep.SetCount(n)
	ep.SetSum(float64(n))
	return md
}

func TestOTLPDeltaHistogramsAreSummedThroughTheTranslation(t *testing.T) {
	h, st := newTestHandler(t, Options{})
	exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", deltaHistograms("batch", []uint64{1, 2, 3}, 1, []uint64{1, 2, 3, 4}, 3*time.Minute, 2*time.Minute), otlp.Protobuf), otlp.Protobuf)
	exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", deltaHistograms("batch", []uint64{10, 0, 1}, 0, []uint64{10, 20}, 2*time.Minute, time.Minute), otlp.JSON), otlp.JSON)
	body := scrapeText(t, h)
	for _, want := range []string{
		`work_duration_seconds_bucket{instance="",job="batch",le="1"} 11`,
		`work_duration_seconds_bucket{instance="",job="batch",le="2"} 13`,
		`work_duration_seconds_count{instance="",job="batch"} 17`,
		`work_size_bytes_count{instance="",job="batch"} 40`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %s:\n%s", want, body)
		}
	}
	// The native histogram, merged at schema 0: schema 1's buckets 1..4
	// (OTLP's 0..3) fall in schema 0's 1 and 2, with 1+2 and 3+4.
	g := st.Group(groupkey.New(map[string]string{"job": "batch"}))
	if g == nil {
		t.Fatal("no group batch")
	}
	for _, f := range g.Families() {
		if f.Name() != "work_size_bytes" {
			continue
		}
		mf, err := f.Decode()
		if err != nil {
			t.Fatal(err)
		}
		nh := mf.Metric[0].GetHistogram()
		if nh.GetSchema() != 0 || !slices.Equal(nh.PositiveDelta, []int64{13, 14}) || nh.PositiveSpan[0].GetOffset() != 1 {
			t.Errorf("native histogram schema %d spans %v deltas %v, want schema 0, buckets 1:13 2:27", nh.GetSchema(), nh.PositiveSpan, nh.PositiveDelta)
		}
		if nh.CreatedTimestamp == nil {
			t.Error("no created timestamp")
		}
		return
	}
	t.Errorf("no family work_size_bytes in %v", g.Families())
}

func TestOTLPBadInputIsA4xxThatChangesNothing(t *testing.T) {
	future := otlpMetricsRequest(1, "batch")
	future.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints().At(0).SetTimestamp(pcommon.NewTimestampFromTime(time.Now().Add(time.Hour)))
	future.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().RemoveIf(func(m pmetric.Metric) bool { return m.Name() == "runs" })
	nameless := otlpMetricsRequest(1, "")
	nameless.ResourceMetrics().At(0).Resource().Attributes().Remove("service.name")
	for _, tc := range []struct {
		name   string
		md     pmetric.Metrics
		lim    limits.Limits
		reason string
	}{
		{"a point far in the future", future, limits.Limits{}, ""},
		{"a resource without a job", nameless, limits.Limits{}, "service.name"},
		{"more series than --push.max-series", otlpMetricsRequest(1, "batch"), limits.Limits{MaxSeriesPerPush: 1}, "max-series"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := store.New(store.Options{Limits: tc.lim})
			h, err := New(st, prometheus.NewRegistry(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			w := postOTLP(t, h, "/otlp/v1/metrics", tc.md, otlp.JSON)
			if w.Code != http.StatusBadRequest {
				t.Fatalf("answer %d %q, want 400", w.Code, w.Body)
			}
			code, msg := rpcStatus(t, w, otlp.JSON)
			if code != otlp.CodeInvalidArgument || !strings.Contains(msg, tc.reason) {
				t.Errorf("status %d %q, want 3 with %q", code, msg, tc.reason)
			}
			if n := len(st.Groups()); n != 0 {
				t.Errorf("%d groups stored, want none", n)
			}
		})
	}
}
