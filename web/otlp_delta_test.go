package web

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/pushgate/pushgate/otlp"
)

func TestOTLPDeltasOfThreeRunsAreSummedAndARetryAddsNothing(t *testing.T) {
	h := otlpTestHandler(t, Options{})
	for i, run := range []struct{ v, start, end int64 }{{2, 0, 10}, {3, 100, 110}, {4, 500, 501}} {
		ps := exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", otlpDeltaRequest("batch", float64(run.v), run.start, run.end), otlp.Protobuf), otlp.Protobuf).PartialSuccess()
		if ps.RejectedDataPoints() != 0 {
			t.Fatalf("run %d: %d points rejected: %s", i+1, ps.RejectedDataPoints(), ps.ErrorMessage())
		}
	}
	ps := exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", otlpDeltaRequest("batch", 3, 100, 110), otlp.JSON), otlp.JSON).PartialSuccess()
	if ps.RejectedDataPoints() != 1 || !strings.Contains(ps.ErrorMessage(), "overlaps") {
		t.Errorf("a replayed request: partial_success %d %q, want its point reported", ps.RejectedDataPoints(), ps.ErrorMessage())
	}
	if body := scrapeText(t, h); !strings.Contains(body, `jobs_done_total{instance="",job="batch"} 9`) {
		t.Errorf("scrape lacks the sum of the three runs, 9:\n%s", body)
	}
}

func TestOTLPDeleteOfTheGroupResetsItsDeltas(t *testing.T) {
	h := otlpTestHandler(t, Options{})
	exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", otlpDeltaRequest("batch", 2, 0, 10), otlp.Protobuf), otlp.Protobuf)
	if w := do(t, h, http.MethodDelete, "/metrics/job/batch", nil, nil); w.Code != http.StatusAccepted {
		t.Fatalf("delete: %d", w.Code)
	}
	// The same window again: after the delete it is new.
	exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", otlpDeltaRequest("batch", 5, 0, 10), otlp.Protobuf), otlp.Protobuf)
	if body := scrapeText(t, h); !strings.Contains(body, `jobs_done_total{instance="",job="batch"} 5`) {
		t.Errorf("scrape lacks the sum since the delete, 5:\n%s", body)
	}
}

func TestOTLPPlainPushOfASummedFamilyDropsItsState(t *testing.T) {
	h := otlpTestHandler(t, Options{})
	exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", otlpDeltaRequest("batch", 2, 0, 10), otlp.Protobuf), otlp.Protobuf)
	if w := do(t, h, http.MethodPost, "/metrics/job/batch", []byte("# TYPE jobs_done_total counter\njobs_done_total 100\n"), nil); w.Code != http.StatusOK {
		t.Fatalf("push: %d %s", w.Code, w.Body)
	}
	exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", otlpDeltaRequest("batch", 1, 10, 20), otlp.Protobuf), otlp.Protobuf)
	if body := scrapeText(t, h); !strings.Contains(body, `jobs_done_total{instance="",job="batch"} 1`) {
		t.Errorf("the sum did not start again after a plain push replaced the family:\n%s", body)
	}
}

func TestOTLPConcurrentDeltasOfOneSeriesAreAllCounted(t *testing.T) {
	h := otlpTestHandler(t, Options{})
	const n = 20
	var wg sync.WaitGroup
	codes := make(chan int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := int64(i * 10)
			codes <- postOTLP(t, h, "/otlp/v1/metrics", otlpDeltaRequest("batch", 1, start, start+10), otlp.Protobuf).Code
		}()
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusOK {
			t.Errorf("a request answered %d", c)
		}
	}
	if body := scrapeText(t, h); !strings.Contains(body, `jobs_done_total{instance="",job="batch"} 20`) {
		t.Errorf("scrape lacks the sum of %d concurrent points:\n%s", n, body)
	}
}

func TestOTLPDeltasAreRefusedInPartialSuccessWithReject(t *testing.T) {
	s := otlp.Settings{Delta: otlp.Reject}
	h, _ := newTestHandler(t, Options{OTLP: OTLPOptions{Settings: s, Translate: func(md pmetric.Metrics, urlLabels map[string]string, _ time.Time) ([]otlp.Group, error) {
		return fakeTranslateWith(s, md, urlLabels)
	}}})
	md := otlpMetricsRequest(1, "batch")
	otlpDeltaRequest("batch", 2, 0, 10).ResourceMetrics().At(0).ScopeMetrics().MoveAndAppendTo(md.ResourceMetrics().At(0).ScopeMetrics())
	ps := exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", md, otlp.Protobuf), otlp.Protobuf).PartialSuccess()
	if ps.RejectedDataPoints() != 1 {
		t.Errorf("partial_success %d %q, want the delta point", ps.RejectedDataPoints(), ps.ErrorMessage())
	}
	if body := scrapeText(t, h); strings.Contains(body, "jobs_done") || !strings.Contains(body, "temp_celsius") {
		t.Errorf("want the gauge stored and no delta:\n%s", body)
	}
	w := postOTLP(t, h, "/otlp/v1/metrics", otlpDeltaRequest("batch", 2, 0, 10), otlp.Protobuf)
	if w.Code != http.StatusBadRequest {
		t.Errorf("a request of deltas alone: %d, want 400 (nothing stored)", w.Code)
	}
}
