package web

import (
	"net/http"
	"strings"
	"testing"
)

// TestSameShapePushesAnswerAsParsedOnes pushes, over HTTP, a body and then
// bodies of its shape: new values are stored from the group's template and
// scraped; a value the template cannot store (a fractional histogram
// count) goes the whole way and is refused with the parser's reason, and
// the refusal leaves the stored values as they were; a body of another
// shape is parsed.
func TestSameShapePushesAnswerAsParsedOnes(t *testing.T) {
	const body = "# TYPE jobs_total counter\njobs_total{kind=\"a\"} 1\n" +
		"# TYPE lat histogram\nlat_bucket{le=\"1\"} 2\nlat_bucket{le=\"+Inf\"} 3\nlat_sum 4.5\nlat_count 3\n"
	h, st := newTestHandler(t, Options{TelemetryPath: "/metrics"})
	push := func(b string) (int, string) {
		w := do(t, h, http.MethodPut, "/metrics/job/j", []byte(b), nil)
		return w.Code, strings.TrimSpace(w.Body.String())
	}
	if code, msg := push(body); code != http.StatusOK {
		t.Fatalf("first push: %d %s", code, msg)
	}
	next := strings.NewReplacer("} 1\n", "} 7\n", "} 2\n", "} 5\n", "} 3\n", "} 9\n", "4.5", "1e3", "count 3", "count 9").Replace(body)
	if code, msg := push(next); code != http.StatusOK {
		t.Fatalf("same-shape push: %d %s", code, msg)
	}
	if st.TemplatePushes() != 1 {
		t.Fatalf("%d pushes applied from the template, want 1", st.TemplatePushes())
	}
	for _, line := range []string{`jobs_total{instance="",job="j",kind="a"} 7`, `lat_bucket{instance="",job="j",le="1"} 5`, `lat_sum{instance="",job="j"} 1000`, `lat_count{instance="",job="j"} 9`} {
		if text := scrapeText(t, h); !strings.Contains(text, line+"\n") {
			t.Fatalf("the scrape lacks %q:\n%s", line, text)
		}
	}
	fractional := strings.Replace(next, "count 9", "count 9.5", 1)
	code, msg := push(fractional)
	if code != http.StatusBadRequest || !strings.Contains(msg, "float histograms cannot be served") {
		t.Fatalf("a fractional histogram count: %d %q, want 400 and the float histogram reason", code, msg)
	}
	if st.TemplatePushes() != 1 {
		t.Fatal("the refused push was applied from the template")
	}
	if text := scrapeText(t, h); !strings.Contains(text, `lat_count{instance="",job="j"} 9`+"\n") ||
		!strings.Contains(text, `push_failure_time_seconds{instance="",job="j"} `) || strings.Contains(text, `push_failure_time_seconds{instance="",job="j"} 0`+"\n") {
		t.Fatalf("the refusal changed the stored values or recorded no failure:\n%s", text)
	}
	if code, msg := push(body + "other_metric 1\n"); code != http.StatusOK || st.TemplatePushes() != 1 {
		t.Fatalf("a push of another shape: %d %s, %d from templates", code, msg, st.TemplatePushes())
	}
}
