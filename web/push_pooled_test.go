package web

import (
	"net/http"
	"strings"
	"testing"
)

// TestPushKeepsNothingOfTheReleasedBody pushes a group, then other bodies
// of the same shape and length through the same handler (valid ones, and
// rejected ones, so that the handler's release on the error path runs too),
// which reuse the pooled memory the first push was decoded into; the first
// group must still scrape exactly as pushed.
func TestPushKeepsNothingOfTheReleasedBody(t *testing.T) {
	const body = "# HELP pooled_info Which build ran.\n# TYPE pooled_info gauge\n" +
		"pooled_info{branch=\"main\",commit=\"abc123\"} 1\n" +
		"# TYPE pooled_seconds summary\n" +
		"pooled_seconds{stage=\"load\",quantile=\"0.5\"} 3\n" +
		"pooled_seconds_sum{stage=\"load\"} 2.5\npooled_seconds_count{stage=\"load\"} 4\n"
	want := []string{
		"# HELP pooled_info Which build ran.",
		`pooled_info{branch="main",commit="abc123",instance="",job="a"} 1`,
		`pooled_seconds{instance="",job="a",stage="load",quantile="0.5"} 3`,
		`pooled_seconds_sum{instance="",job="a",stage="load"} 2.5`,
		`pooled_seconds_count{instance="",job="a",stage="load"} 4`,
	}
	other := strings.NewReplacer("pooled", "qppmfe", "main", "xxxx", "abc123", "zzz999", "load", "save",
		"Which build ran.", "Other text here!", "} 3", "} 7", "} 4", "} 8", "2.5", "9.5").Replace(body)
	// The same names as the first group with a conflicting type: rejected
	// by the consistency check after decoding.
	conflicting := strings.Replace(body, "gauge", "count", 1)
	conflicting = strings.Replace(conflicting, "count\n", "counter\n", 1)

	h, _ := newTestHandler(t, Options{TelemetryPath: "/metrics"})
	if w := do(t, h, http.MethodPut, "/metrics/job/a", []byte(body), nil); w.Code != http.StatusOK {
		t.Fatalf("push: %d %s", w.Code, w.Body)
	}
	for i := range 20 {
		if w := do(t, h, http.MethodPut, "/metrics/job/b", []byte(other), nil); w.Code != http.StatusOK {
			t.Fatalf("push %d of other values: %d %s", i, w.Code, w.Body)
		}
		if w := do(t, h, http.MethodPost, "/metrics/job/c", []byte(conflicting), nil); w.Code != http.StatusBadRequest {
			t.Fatalf("conflicting push %d: %d %s, want 400", i, w.Code, w.Body)
		}
	}
	text := scrapeText(t, h)
	for _, line := range want {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("the scrape lacks %q after the push's memory was reused:\n%s", line, text)
		}
	}
}
