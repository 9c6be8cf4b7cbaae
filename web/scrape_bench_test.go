package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/store"
)

// BenchmarkFirstTextScrape measures what a gateway's first text scrape of
// 10,000 bench groups allocates, through a fresh handler each time (its
// pools empty): a gateway's RSS right after a fill grows by about that much
// when it is scraped. Reported as first-scrape-MB (6.1 before the scrape
// sized its parts once per run, 3.3 after).
func BenchmarkFirstTextScrape(b *testing.B) {
	st := store.New(store.Options{})
	fillBenchGroups(b, st, 10_000)
	var allocated uint64
	for b.Loop() {
		h, err := New(st, prometheus.NewRegistry(), Options{TelemetryPath: "/metrics"})
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(h)
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Accept", "text/plain")
		req.Header.Set("Accept-Encoding", "identity")
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		resp, err := srv.Client().Do(req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		runtime.ReadMemStats(&after)
		allocated += after.TotalAlloc - before.TotalAlloc
		srv.Close()
	}
	b.ReportMetric(float64(allocated)/float64(b.N)/1e6, "first-scrape-MB")
}

// fillBenchGroups pushes the bench payload to groups i0 … i<n-1> of job
// payload.Job in st, straight through the store.
func fillBenchGroups(tb testing.TB, st *store.Store, n int) {
	tb.Helper()
	ctx := context.Background()
	for i := range n {
		k := groupkey.New(map[string]string{"job": payload.Job, "instance": fmt.Sprintf("i%d", i)})
		if _, err := st.Push(ctx, store.Push{Key: k, Method: store.Replace, Families: payload.Families(i, 0), Time: time.Now()}); err != nil {
			tb.Fatal(err)
		}
	}
}
