package web

import (
	"net/http"
	"strings"
	"testing"
)

// TestPushAndDeleteRequestsAreCountedAsTheReferenceCountsThem pins the
// labels and summaries dashboards built for the reference read: a DELETE is
// handler="delete", and every push request is observed in the duration and
// size summaries, rejected ones too.
func TestPushAndDeleteRequestsAreCountedAsTheReferenceCountsThem(t *testing.T) {
	h, _ := newTestHandler(t, Options{})
	for _, req := range []struct {
		method, path, body string
		want               int
	}{
		{http.MethodPut, "/metrics/job/j", "m 1\n", http.StatusOK},
		{http.MethodPut, "/metrics/job/j", "m 1 1000\n", http.StatusBadRequest},      // a sample timestamp
		{http.MethodPost, "/metrics/job/j", "not a metric\n", http.StatusBadRequest}, // a body that does not parse
		{http.MethodPost, "/metrics/job/j/odd", "m 1\n", http.StatusBadRequest},      // a path that does not
		{http.MethodDelete, "/metrics/job/j", "", http.StatusAccepted},
	} {
		if w := do(t, h, req.method, req.path, []byte(req.body), nil); w.Code != req.want {
			t.Fatalf("%s %s: %d %s, want %d", req.method, req.path, w.Code, w.Body, req.want)
		}
	}
	got := scrapeText(t, h)
	for _, want := range []string{
		`pushgateway_http_requests_total{code="202",handler="delete",method="delete"} 1`,
		`pushgateway_http_requests_total{code="200",handler="push",method="put"} 1`,
		`pushgateway_http_requests_total{code="400",handler="push",method="put"} 1`,
		`pushgateway_http_requests_total{code="400",handler="push",method="post"} 2`,
		`pushgateway_http_push_duration_seconds_count{method="put"} 2`,
		`pushgateway_http_push_duration_seconds_count{method="post"} 2`,
		`pushgateway_http_push_size_bytes_count{method="put"} 2`,
		`pushgateway_http_push_size_bytes_count{method="post"} 2`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("the scrape lacks %s", want)
		}
	}
	if strings.Contains(got, `pushgateway_http_push_duration_seconds_count{method="delete"}`) {
		t.Error("a DELETE was observed as a push")
	}
}
