package web

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestEveryRouteButHealthAndReadinessAnswers503WhileLoading pins the
// readiness gate: until the stored state is loaded no request may read a
// partial store or change it, whatever its route, and the refusal is one
// line saying why.
func TestEveryRouteButHealthAndReadinessAnswers503WhileLoading(t *testing.T) {
	var ready atomic.Bool
	h, _ := newTestHandler(t, Options{Ready: ready.Load, EnableAdminAPI: true, EnableLifecycle: true})
	protobuf := map[string]string{"Accept": "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"}
	openMetrics := map[string]string{"Accept": "application/openmetrics-text;version=1.0.0", "Accept-Encoding": "gzip"}
	refused := []struct {
		name, method, target string
		header               map[string]string
	}{
		{"a text scrape", http.MethodGet, "/metrics", nil},
		{"a protobuf scrape", http.MethodGet, "/metrics", protobuf},
		{"a gzip OpenMetrics scrape", http.MethodGet, "/metrics", openMetrics},
		{"a HEAD scrape", http.MethodHead, "/metrics", nil},
		{"the JSON of every group", http.MethodGet, "/api/v1/metrics", nil},
		{"the status API", http.MethodGet, "/api/v1/status", nil},
		{"the UI's groups page", http.MethodGet, "/", nil},
		{"the UI's group page", http.MethodGet, "/group?key=x", nil},
		{"the UI's status page", http.MethodGet, "/status", nil},
		{"a static asset", http.MethodGet, "/static/style.css", nil},
		{"the admin groups list", http.MethodGet, "/api/v1/admin/groups", nil},
		{"an admin delete", http.MethodDelete, "/api/v1/admin/groups?match[]=job=\"j\"", nil},
		{"a wipe", http.MethodPut, "/api/v1/admin/wipe", nil},
		{"a PUT", http.MethodPut, "/metrics/job/j", nil},
		{"a POST", http.MethodPost, "/metrics/job/j", nil},
		{"a DELETE", http.MethodDelete, "/metrics/job/j", nil},
		{"a quit", http.MethodPut, "/-/quit", nil},
	}
	for _, c := range refused {
		w := do(t, h, c.method, c.target, []byte("m 1\n"), c.header)
		body := w.Body.String()
		if w.Code != http.StatusServiceUnavailable || strings.Count(body, "\n") != 1 || !strings.Contains(body, "loading") {
			t.Errorf("%s while loading: %d %q, want 503 with a one-line reason", c.name, w.Code, body)
		}
	}
	if w := do(t, h, http.MethodGet, "/-/healthy", nil, nil); w.Code != http.StatusOK {
		t.Errorf("healthy while loading: %d, want 200", w.Code)
	}
	if w := do(t, h, http.MethodGet, "/-/ready", nil, nil); w.Code != http.StatusServiceUnavailable {
		t.Errorf("ready while loading: %d, want 503", w.Code)
	}

	ready.Store(true)
	if w := do(t, h, http.MethodPut, "/metrics/job/j", []byte("m 1\n"), nil); w.Code != http.StatusOK {
		t.Fatalf("push once loaded: %d %s", w.Code, w.Body)
	}
	if got := scrapeText(t, h); !strings.Contains(got, `m{instance="",job="j"} 1`) ||
		!strings.Contains(got, `pushgate_rejected_requests_total{handler="metrics",reason="loading"} 4`) {
		t.Errorf("once loaded, the scrape lacks the push or the count of refused scrapes:\n%s", got)
	}
}
