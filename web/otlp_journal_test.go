package web

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/pushgate/pushgate/journal/filejournal"
	"github.com/pushgate/pushgate/otlp"
	"github.com/pushgate/pushgate/store"
)

// journaledOTLPHandler opens the journal at path into a fresh store, as a
// restart does, and returns a handler over it and the journal.
func journaledOTLPHandler(t *testing.T, path string) (*Handler, *filejournal.Journal) {
	t.Helper()
	st := store.New(store.Options{})
	j, err := filejournal.Open(context.Background(), path, filejournal.Options{}, st.Restore)
	if err != nil {
		t.Fatal(err)
	}
	st.SetJournal(j)
	h, err := New(st, prometheus.NewRegistry(), Options{OTLP: OTLPOptions{Translate: fakeTranslate}})
	if err != nil {
		t.Fatal(err)
	}
	return h, j
}

func TestOTLPDeltaStateSurvivesARestartFromTheJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal")
	h, j := journaledOTLPHandler(t, path)
	exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", otlpDeltaRequest("batch", 2, 0, 10), otlp.Protobuf), otlp.Protobuf)
	exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", otlpDeltaRequest("batch", 3, 100, 110), otlp.Protobuf), otlp.Protobuf)
	// Nothing but the journal's records crosses the restart.
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	h, j = journaledOTLPHandler(t, path)
	t.Cleanup(func() { _ = j.Close() })
	ps := exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", otlpDeltaRequest("batch", 3, 100, 110), otlp.Protobuf), otlp.Protobuf).PartialSuccess()
	if ps.RejectedDataPoints() != 1 {
		t.Errorf("a replay after the restart: %d points rejected, want 1 (its window was summed before)", ps.RejectedDataPoints())
	}
	exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", otlpDeltaRequest("batch", 4, 200, 210), otlp.Protobuf), otlp.Protobuf)
	if body := scrapeText(t, h); !strings.Contains(body, `jobs_done_total{instance="",job="batch"} 9`) {
		t.Errorf("scrape lacks the sum across the restart, 9:\n%s", body)
	}
}

// processExport is otlpDeltaRequest from process id, with a gauge
// "temp.celsius" of v at end too.
func processExport(id string, v float64, start, end int64) pmetric.Metrics {
	md := otlpDeltaRequest("batch", v, start, end)
	rm := md.ResourceMetrics().At(0)
	rm.Resource().Attributes().PutStr("service.instance.id", id)
	g := rm.ScopeMetrics().At(0).Metrics().AppendEmpty()
	g.SetName("temp.celsius")
	p := g.SetEmptyGauge().DataPoints().AppendEmpty()
	p.SetDoubleValue(v)
	p.SetTimestamp(pcommon.Timestamp(end * 1e9))
	return md
}

func TestOTLPSourcesAndFamilyTimesSurviveARestartFromTheJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal")
	h, j := journaledOTLPHandler(t, path)
	// Two processes at once, overlapping windows: both summed.
	exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", processExport("a", 2, 0, 10), otlp.Protobuf), otlp.Protobuf)
	exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", processExport("b", 3, 5, 15), otlp.Protobuf), otlp.Protobuf)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	h, j = journaledOTLPHandler(t, path)
	t.Cleanup(func() { _ = j.Close() })
	// Process a's export replayed: its delta a retry, its gauge older
	// than b's.
	ps := exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", processExport("a", 2, 0, 10), otlp.Protobuf), otlp.Protobuf).PartialSuccess()
	if ps.RejectedDataPoints() != 2 {
		t.Errorf("a replay after the restart: %d points rejected, want 2 (%s)", ps.RejectedDataPoints(), ps.ErrorMessage())
	}
	// A third process overlapping both: summed.
	exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", processExport("c", 4, 0, 20), otlp.Protobuf), otlp.Protobuf)
	body := scrapeText(t, h)
	for _, want := range []string{`jobs_done_total{instance="",job="batch"} 9`, `temp_celsius{instance="",job="batch"} 4`} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %s:\n%s", want, body)
		}
	}
}
