package web

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/pushgate/pushgate/store"
)

// newFreshGateway returns a handler over an empty store whose registry holds
// what cmd/pushgate registers: the Go and process collectors.
func newFreshGateway(t *testing.T) http.Handler {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	h, err := New(store.New(store.Options{}), reg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestAnOpenMetricsScrapeOfAFreshGatewayHoldsNoFamilyNameTwice(t *testing.T) {
	h := newFreshGateway(t)
	for _, esc := range []string{"allow-utf-8", "underscores", "dots", "values"} {
		for _, gz := range []bool{false, true} {
			t.Run(fmt.Sprintf("escaping=%s, gzip %v", esc, gz), func(t *testing.T) {
				header := map[string]string{"Accept": "application/openmetrics-text;version=1.0.0;escaping=" + esc}
				if gz {
					header["Accept-Encoding"] = "gzip"
				}
				w := do(t, h, http.MethodGet, "/metrics", nil, header)
				if w.Code != http.StatusOK {
					t.Fatalf("scrape: %d %s", w.Code, w.Body)
				}
				body := w.Body.String()
				if gz {
					zr, err := gzip.NewReader(w.Body)
					if err != nil {
						t.Fatal(err)
					}
					b, err := io.ReadAll(zr)
					if err != nil {
						t.Fatal(err)
					}
					body = string(b)
				}
				if !strings.HasSuffix(body, "# EOF\n") {
					t.Fatalf("no # EOF at the end:\n%s", body)
				}
				// Each family has at most one HELP and one TYPE line,
				// under its OpenMetrics name (a counter X_total's is X).
				seen := map[string]bool{}
				for line := range strings.Lines(body) {
					for _, keyword := range []string{"# HELP ", "# TYPE "} {
						rest, ok := strings.CutPrefix(line, keyword)
						if !ok {
							continue
						}
						name := keyword + rest[:strings.IndexByte(rest, ' ')]
						if seen[name] {
							t.Errorf("two %sfamily name lines", name)
						}
						seen[name] = true
					}
				}
				if !seen["# TYPE go_memstats_alloc_bytes"] || !strings.Contains(body, "\ngo_memstats_alloc_bytes_total ") {
					t.Errorf("the scrape lacks go_memstats_alloc_bytes or its _total series:\n%s", body)
				}
			})
		}
	}
}
