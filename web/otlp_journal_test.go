package web

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

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
