package web

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/pushgate/pushgate/otlp"
)

// batchRun builds the export of one run of job "batch", a process of its
// own (service.instance.id "run-<n>"), that ended at end: a cumulative
// counter items.processed of 10n, a gauge queue.depth of n, a cumulative
// histogram latency of n observations of 0.5 (bound 1), and a delta
// counter jobs.done of 1 over the run (end-1m, end].
func batchRun(n int, end time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "batch")
	rm.Resource().Attributes().PutStr("service.instance.id", "run-"+string(rune('0'+n)))
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	start, ts := pcommon.NewTimestampFromTime(end.Add(-time.Minute)), pcommon.NewTimestampFromTime(end)

	c := ms.AppendEmpty()
	c.SetName("items.processed")
	c.SetEmptySum().SetIsMonotonic(true)
	c.Sum().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	cp := c.Sum().DataPoints().AppendEmpty()
	cp.SetStartTimestamp(start)
	cp.SetTimestamp(ts)
	cp.SetIntValue(int64(10 * n))

	g := ms.AppendEmpty()
	g.SetName("queue.depth")
	gp := g.SetEmptyGauge().DataPoints().AppendEmpty()
	gp.SetTimestamp(ts)
	gp.SetIntValue(int64(n))

	h := ms.AppendEmpty()
	h.SetName("latency")
	h.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	hp := h.Histogram().DataPoints().AppendEmpty()
	hp.SetStartTimestamp(start)
	hp.SetTimestamp(ts)
	hp.ExplicitBounds().FromRaw([]float64{1})
	hp.BucketCounts().FromRaw([]uint64{uint64(n), 0})
	hp.SetCount(uint64(n))
	hp.SetSum(0.5 * float64(n))

	d := ms.AppendEmpty()
	d.SetName("jobs.done")
	d.SetEmptySum().SetIsMonotonic(true)
	d.Sum().SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	dp := d.Sum().DataPoints().AppendEmpty()
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(ts)
	dp.SetIntValue(1)
	return md
}

// wantScrape fails the test unless the scrape holds every line of want.
func wantScrape(t *testing.T, h http.Handler, want ...string) {
	t.Helper()
	body := scrapeText(t, h)
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("scrape lacks %s:\n%s", w, body)
		}
	}
}

func TestOTLPAReplayOfAnEarlierRunDoesNotRollTheValuesBack(t *testing.T) {
	h, _ := newTestHandler(t, Options{})
	now := time.Now()
	ends := map[int]time.Time{1: now.Add(-30 * time.Minute), 2: now.Add(-20 * time.Minute), 3: now.Add(-10 * time.Minute)}
	for n := 1; n <= 3; n++ {
		ps := exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", batchRun(n, ends[n]), otlp.Protobuf), otlp.Protobuf).PartialSuccess()
		if ps.RejectedDataPoints() != 0 {
			t.Fatalf("run %d: %d points rejected: %s", n, ps.RejectedDataPoints(), ps.ErrorMessage())
		}
	}
	ps := exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", batchRun(2, ends[2]), otlp.Protobuf), otlp.Protobuf).PartialSuccess()
	// Its three cumulative points are out of order, its delta point a
	// retry.
	if ps.RejectedDataPoints() != 4 {
		t.Errorf("the replay of run 2: %d points rejected, want 4: %s", ps.RejectedDataPoints(), ps.ErrorMessage())
	}
	if msg := ps.ErrorMessage(); !strings.Contains(msg, "older than the stored value (out of order)") || !strings.Contains(msg, "items_processed_total") {
		t.Errorf("partial_success message %q does not name the family out of order", msg)
	}
	wantScrape(t, h,
		`items_processed_total{instance="",job="batch"} 30`,
		`queue_depth{instance="",job="batch"} 3`,
		`latency_count{instance="",job="batch"} 3`,
		`jobs_done_total{instance="",job="batch"} 3`,
	)
}

func TestOTLPARequestAsNewAsTheStoredValuesIsStored(t *testing.T) {
	h, _ := newTestHandler(t, Options{})
	end := time.Now().Add(-time.Minute)
	exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", batchRun(1, end), otlp.Protobuf), otlp.Protobuf)
	// Another process reporting at the same instant: not older, so its
	// values replace the stored ones.
	md := batchRun(2, end)
	ps := exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", md, otlp.JSON), otlp.JSON).PartialSuccess()
	if ps.RejectedDataPoints() != 0 {
		t.Errorf("%d points rejected: %s", ps.RejectedDataPoints(), ps.ErrorMessage())
	}
	wantScrape(t, h,
		`items_processed_total{instance="",job="batch"} 20`,
		`queue_depth{instance="",job="batch"} 2`,
		`jobs_done_total{instance="",job="batch"} 2`,
	)
}

func TestOTLPAFamilyAPlainPushStoredHasNoTimeAndIsReplaced(t *testing.T) {
	h, _ := newTestHandler(t, Options{})
	if w := do(t, h, http.MethodPost, "/metrics/job/batch", []byte("# TYPE items_processed_total counter\nitems_processed_total 500\n"), nil); w.Code != http.StatusOK {
		t.Fatalf("push: %d %s", w.Code, w.Body)
	}
	ps := exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", batchRun(1, time.Now().Add(-time.Hour)), otlp.Protobuf), otlp.Protobuf).PartialSuccess()
	if ps.RejectedDataPoints() != 0 {
		t.Errorf("%d points rejected: %s", ps.RejectedDataPoints(), ps.ErrorMessage())
	}
	wantScrape(t, h, `items_processed_total{instance="",job="batch"} 10`)
	// And a plain push replaces an OTLP family, its time with it.
	if w := do(t, h, http.MethodPost, "/metrics/job/batch", []byte("# TYPE items_processed_total counter\nitems_processed_total 7\n"), nil); w.Code != http.StatusOK {
		t.Fatalf("push: %d %s", w.Code, w.Body)
	}
	exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", batchRun(2, time.Now().Add(-2*time.Hour)), otlp.Protobuf), otlp.Protobuf)
	wantScrape(t, h, `items_processed_total{instance="",job="batch"} 20`)
}

func TestOTLPTwoProcessesOfOneJobRunningAtOnceHaveAllTheirDeltasSummed(t *testing.T) {
	h, _ := newTestHandler(t, Options{})
	end := time.Now().Add(-time.Minute)
	// Runs 1 and 2 overlap: same window, different processes. Then each
	// retries its export.
	for _, n := range []int{1, 2} {
		ps := exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", batchRun(n, end.Add(time.Duration(n)*time.Second)), otlp.Protobuf), otlp.Protobuf).PartialSuccess()
		if ps.RejectedDataPoints() != 0 {
			t.Errorf("run %d: %d points rejected: %s", n, ps.RejectedDataPoints(), ps.ErrorMessage())
		}
	}
	ps := exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", batchRun(2, end.Add(2*time.Second)), otlp.Protobuf), otlp.Protobuf).PartialSuccess()
	if ps.RejectedDataPoints() != 1 || !strings.Contains(ps.ErrorMessage(), "a window this process summed already (a retried export)") {
		t.Errorf("run 2's retry: partial_success %d %q, want its delta point refused as a retry", ps.RejectedDataPoints(), ps.ErrorMessage())
	}
	wantScrape(t, h, `jobs_done_total{instance="",job="batch"} 2`)
}
