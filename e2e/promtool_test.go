package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
)

// scrapeFormat is one way of asking the gateway for /metrics.
type scrapeFormat struct {
	name   string
	accept string
	// quotesUTF8 is set when the answer may write UTF-8 names quoted
	// (escaping=allow-utf-8), which promtool's parser does not read.
	quotesUTF8 bool
}

// promtoolFormats are the answers promtool check metrics is given: every
// text variant, the exact Accept headers of Prometheus 2.42 and of
// Prometheus 3 (default scrape protocols), and OpenMetrics.
var promtoolFormats = []scrapeFormat{
	{name: "no Accept header", accept: ""},
	{name: "text 0.0.4", accept: "text/plain;version=0.0.4"},
	{name: "text 1.0.0 escaping=underscores", accept: "text/plain;version=1.0.0;escaping=underscores"},
	{name: "text 1.0.0 escaping=dots", accept: "text/plain;version=1.0.0;escaping=dots"},
	{name: "text 1.0.0 escaping=values", accept: "text/plain;version=1.0.0;escaping=values"},
	{name: "text 1.0.0 escaping=allow-utf-8", accept: "text/plain;version=1.0.0;escaping=allow-utf-8", quotesUTF8: true},
	{name: "Prometheus 2.42", accept: "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"},
	{name: "Prometheus 3", accept: "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.7,application/openmetrics-text;version=0.0.1;q=0.6,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.3", quotesUTF8: true},
	{name: "OpenMetrics 1.0.0", accept: "application/openmetrics-text;version=1.0.0"},
	{name: "OpenMetrics 0.0.1", accept: "application/openmetrics-text;version=0.0.1"},
	{name: "OpenMetrics 1.0.0 escaping=allow-utf-8", accept: "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8", quotesUTF8: true},
}

// pushTextAnyStatus pushes a text body with PUT and accepts 200 or 400: for
// pushes the gateway may rightly refuse, after which whatever it accepted
// must still scrape cleanly.
func pushTextAnyStatus(t *testing.T, g *gateway, path, body string) {
	t.Helper()
	r := do(t, http.MethodPut, g.url(path), []byte(body))
	if r.Status != http.StatusOK && r.Status != http.StatusBadRequest {
		t.Fatalf("PUT %s: got %s, want 200 or 400", path, r)
	}
	t.Logf("PUT %s: %s", path, r)
}

// TestPromtoolChecksEveryFormat runs Prometheus 3's promtool check metrics on
// the gateway's /metrics in every format, for stores of counters, gauges,
// classic and native histograms and summaries in several groups, with and
// without UTF-8 names. A text answer must pass without a single error or lint
// problem. promtool reads OpenMetrics with its text 0.0.4 parser, to which
// an OpenMetrics counter's X_total sample is a family of its own without HELP;
// so an OpenMetrics answer must parse, and its only lint problems may be
// "no help text" on such _total families.
func TestPromtoolChecksEveryFormat(t *testing.T) {
	promtool := filepath.Join(prometheus3Dir(t), "promtool")
	const store = `# HELP e2e_pt_temperature_celsius A gauge.
# TYPE e2e_pt_temperature_celsius gauge
e2e_pt_temperature_celsius{room="a"} 21.5
e2e_pt_temperature_celsius{room="b"} -3
# HELP e2e_pt_runs_total A counter.
# TYPE e2e_pt_runs_total counter
e2e_pt_runs_total 3
# HELP e2e_pt_duration_seconds A histogram.
# TYPE e2e_pt_duration_seconds histogram
e2e_pt_duration_seconds_bucket{le="0.5"} 1
e2e_pt_duration_seconds_bucket{le="1"} 2
e2e_pt_duration_seconds_bucket{le="+Inf"} 3
e2e_pt_duration_seconds_sum 4.5
e2e_pt_duration_seconds_count 3
# HELP e2e_pt_size_bytes A summary.
# TYPE e2e_pt_size_bytes summary
e2e_pt_size_bytes{quantile="0.5"} 100
e2e_pt_size_bytes{quantile="0.99"} 250
e2e_pt_size_bytes_sum 1000
e2e_pt_size_bytes_count 8
`
	for _, tc := range []struct {
		name  string
		flags []string
		// utf8 is set when the store holds names that only UTF-8 allows.
		utf8 bool
		fill func(t *testing.T, g *gateway)
	}{
		{
			name: "a store of every metric type in several groups checks clean",
			fill: func(t *testing.T, g *gateway) {
				pushText(t, g, http.MethodPut, "/metrics/job/pt_a/instance/i1", store)
				pushText(t, g, http.MethodPut, "/metrics/job/pt_b", store)
				pushNativeHistogram(t, g, "pt_native")
			},
		},
		{
			name:  "a store with UTF-8 names checks clean in every escaping",
			flags: []string{"--push.enable-utf8-names"},
			utf8:  true,
			fill: func(t *testing.T, g *gateway) {
				pushText(t, g, http.MethodPut, "/metrics/job/pt_a/instance/i1", store)
				pushNativeHistogram(t, g, "pt_native")
				pushText(t, g, http.MethodPut, "/metrics/job/pt_utf8/U__path_2e_label/v", `# HELP "e2e.pt.dotted_celsius" A dotted gauge.
# TYPE "e2e.pt.dotted_celsius" gauge
{"e2e.pt.dotted_celsius","room.name"="a","x:y"="b"} 1
# HELP "e2e.pt.dotted_seconds" A dotted histogram.
# TYPE "e2e.pt.dotted_seconds" histogram
{"e2e.pt.dotted_seconds_bucket",le="1"} 1
{"e2e.pt.dotted_seconds_bucket",le="+Inf"} 1
{"e2e.pt.dotted_seconds_sum"} 0.5
{"e2e.pt.dotted_seconds_count"} 1
`)
			},
		},
		{
			name:  "names that escaping maps to one name check clean, whichever of their pushes are accepted",
			flags: []string{"--push.enable-utf8-names"},
			utf8:  true,
			fill: func(t *testing.T, g *gateway) {
				pushTextAnyStatus(t, g, "/metrics/job/pt_c1", `# HELP "e2e.pt.clash_celsius" One.
# TYPE "e2e.pt.clash_celsius" gauge
{"e2e.pt.clash_celsius"} 1
`)
				pushTextAnyStatus(t, g, "/metrics/job/pt_c2", `# HELP e2e_pt_clash_celsius Two.
# TYPE e2e_pt_clash_celsius gauge
e2e_pt_clash_celsius 2
`)
				pushTextAnyStatus(t, g, "/metrics/job/pt_c3", `# HELP e2e_pt_labels_celsius Three.
# TYPE e2e_pt_labels_celsius gauge
e2e_pt_labels_celsius{"a.b"="1",a_b="2"} 3
`)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startGateway(t, tc.flags...)
			tc.fill(t, g)
			for _, f := range promtoolFormats {
				if tc.utf8 && f.quotesUTF8 {
					// promtool's parser takes legacy names only; it stops
					// at the first quoted UTF-8 name with
					// `invalid metric name "e2e.pt.dotted_celsius"`.
					continue
				}
				checkWithPromtool(t, promtool, g, f)
			}
		})
	}
}

// pushNativeHistogram pushes a native histogram, a counter and a summary with
// client_golang (protobuf) to {job=job}.
func pushNativeHistogram(t *testing.T, g *gateway, job string) {
	t.Helper()
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "e2e_pt_native_seconds", Help: "A native histogram.", NativeHistogramBucketFactor: 1.1,
	})
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "e2e_pt_pushes_total", Help: "A counter."})
	s := prometheus.NewSummary(prometheus.SummaryOpts{
		Name: "e2e_pt_latency_seconds", Help: "A summary.", Objectives: map[float64]float64{0.5: 0.05},
	})
	reg.MustRegister(h, c, s)
	for _, v := range []float64{0, 0.5, 1.5, -2} {
		h.Observe(v)
		s.Observe(v)
	}
	c.Add(4)
	if err := push.New(g.URL, job).Gatherer(reg).Push(); err != nil {
		t.Fatalf("client_golang push: %v", err)
	}
}

// checkWithPromtool scrapes the gateway in format f and runs promtool check
// metrics on the answer (see TestPromtoolChecksEveryFormat for what passes).
func checkWithPromtool(t *testing.T, promtool string, g *gateway, f scrapeFormat) {
	t.Helper()
	var header []string
	if f.accept != "" {
		header = []string{"Accept", f.accept}
	}
	r := mustStatus(t, http.StatusOK, http.MethodGet, g.url("/metrics"), nil, header...)
	contentType := r.Header.Get("Content-Type")
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		t.Fatalf("%s: Content-Type %q: %v", f.name, contentType, err)
	}
	if mediaType != "text/plain" && mediaType != "application/openmetrics-text" {
		t.Fatalf("%s: Content-Type %q, want text or OpenMetrics", f.name, contentType)
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(r.Body)
	out, err := cmd.CombinedOutput()
	code := 0
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("run promtool: %v", err)
	}
	problems := strings.TrimSpace(string(out))
	if mediaType == "application/openmetrics-text" && code == 3 {
		var other []string
		for _, line := range strings.Split(problems, "\n") {
			if name, ok := strings.CutSuffix(line, " no help text"); !ok || !strings.HasSuffix(name, "_total") {
				other = append(other, line)
			}
		}
		if len(other) == 0 {
			return
		}
	}
	if code != 0 || problems != "" {
		t.Errorf("%s (Content-Type %q): promtool check metrics exited %d:\n%s\nbody:\n%s", f.name, contentType, code, problems, bodyNear(r.Body, problems))
	}
}

// promtoolLine finds the line number in promtool's "parsing error in line N".
var promtoolLine = regexp.MustCompile(`in line (\d+)`)

// bodyNear returns the lines of body around the line promtool's output names,
// numbered, or the start of body when it names none.
func bodyNear(body []byte, promtoolOutput string) string {
	m := promtoolLine.FindStringSubmatch(promtoolOutput)
	if m == nil {
		return clip(body)
	}
	n, _ := strconv.Atoi(m[1])
	all := strings.Split(string(body), "\n")
	var b strings.Builder
	for i := max(n-6, 1); i <= min(n+2, len(all)); i++ {
		fmt.Fprintf(&b, "%5d: %s\n", i, all[i-1])
	}
	return b.String()
}
