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
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Prometheus 3 (prometheus and promtool v0.316.0) is built once per machine
// by scripts/prometheus3.sh (make test-deps runs it); the tests ask the same
// script, without building, where the binaries are, so the directory is
// defined in one place and PROMETHEUS3_DIR overrides it for both.
var (
	prometheus3Once sync.Once
	prometheus3Path string
	prometheus3Err  error
)

// prometheus3Dir returns the directory holding Prometheus 3's prometheus and
// promtool. When they are not built, the test is skipped loudly, or fails
// under CI=true.
func prometheus3Dir(t *testing.T) string {
	t.Helper()
	prometheus3Once.Do(func() {
		cmd := exec.Command("bash", filepath.Join(moduleRoot, "scripts", "prometheus3.sh"), "--no-build")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			prometheus3Err = fmt.Errorf("scripts/prometheus3.sh --no-build: %w: %s", err, strings.TrimSpace(stderr.String()))
			return
		}
		prometheus3Path = strings.TrimSpace(string(out))
	})
	if prometheus3Err != nil {
		missingDependency(t, fmt.Sprintf("Prometheus 3 (%v)", prometheus3Err))
	}
	return prometheus3Path
}

// prometheus3Binary returns the path of Prometheus 3's prometheus; call it
// before starting anything, so that a missing binary skips the test early.
func prometheus3Binary(t *testing.T) string {
	t.Helper()
	return filepath.Join(prometheus3Dir(t), "prometheus")
}

// TestPrometheus3ScrapesLegacyNames lets Prometheus 3, with its default scrape
// settings (OpenMetrics first, then text 1.0.0 and 0.0.4, names escaped
// allow-utf-8), scrape a gateway without UTF-8 names, and finds every pushed
// counter, gauge, classic histogram and summary series with its name, labels
// and value through the query API.
func TestPrometheus3ScrapesLegacyNames(t *testing.T) {
	bin := prometheus3Binary(t)
	g := startGateway(t)
	pushText(t, g, http.MethodPut, "/metrics/job/p3_legacy/instance/host1", `# HELP e2e_p3_temperature_celsius A gauge.
# TYPE e2e_p3_temperature_celsius gauge
e2e_p3_temperature_celsius{room="a"} 21.5
e2e_p3_temperature_celsius{room="b"} -3
# HELP e2e_p3_runs_total A counter.
# TYPE e2e_p3_runs_total counter
e2e_p3_runs_total 3
# HELP e2e_p3_duration_seconds A histogram.
# TYPE e2e_p3_duration_seconds histogram
e2e_p3_duration_seconds_bucket{le="0.5"} 1
e2e_p3_duration_seconds_bucket{le="1"} 2
e2e_p3_duration_seconds_bucket{le="+Inf"} 3
e2e_p3_duration_seconds_sum 4.5
e2e_p3_duration_seconds_count 3
# HELP e2e_p3_size_bytes A summary.
# TYPE e2e_p3_size_bytes summary
e2e_p3_size_bytes{quantile="0.5"} 100
e2e_p3_size_bytes{quantile="0.99"} 250
e2e_p3_size_bytes_sum 1000
e2e_p3_size_bytes_count 8
`)
	p := startPrometheusBinary(t, bin, scrapeConfig(g))

	// Prometheus 3 writes le and quantile as floats ("1" → "1.0") whatever
	// the format spelled.
	p.requireQuery(t, `{job="p3_legacy",__name__!~"push_.*"}`, lines(
		`"e2e_p3_duration_seconds_bucket"{"instance"="host1","job"="p3_legacy","le"="+Inf"} 3`,
		`"e2e_p3_duration_seconds_bucket"{"instance"="host1","job"="p3_legacy","le"="0.5"} 1`,
		`"e2e_p3_duration_seconds_bucket"{"instance"="host1","job"="p3_legacy","le"="1.0"} 2`,
		`"e2e_p3_duration_seconds_count"{"instance"="host1","job"="p3_legacy"} 3`,
		`"e2e_p3_duration_seconds_sum"{"instance"="host1","job"="p3_legacy"} 4.5`,
		`"e2e_p3_runs_total"{"instance"="host1","job"="p3_legacy"} 3`,
		`"e2e_p3_size_bytes"{"instance"="host1","job"="p3_legacy","quantile"="0.5"} 100`,
		`"e2e_p3_size_bytes"{"instance"="host1","job"="p3_legacy","quantile"="0.99"} 250`,
		`"e2e_p3_size_bytes_count"{"instance"="host1","job"="p3_legacy"} 8`,
		`"e2e_p3_size_bytes_sum"{"instance"="host1","job"="p3_legacy"} 1000`,
		`"e2e_p3_temperature_celsius"{"instance"="host1","job"="p3_legacy","room"="a"} 21.5`,
		`"e2e_p3_temperature_celsius"{"instance"="host1","job"="p3_legacy","room"="b"} -3`,
	))
	p.requireQuery(t, `push_failure_time_seconds{job="p3_legacy"}`,
		`"push_failure_time_seconds"{"instance"="host1","job"="p3_legacy"} 0`)
	p.requireQuery(t, `count(push_time_seconds{job="p3_legacy"} > 0)`, `""{} 1`)
	p.requireTargetHealthy(t)
}

// TestPrometheus3ScrapesUTF8Names lets Prometheus 3, with its default scrape
// settings (which ask for allow-utf-8 escaping), scrape a gateway started
// with --push.enable-utf8-names, and finds pushed series whose metric and
// label names hold characters outside the legacy alphabet under exactly
// their pushed names, with their values.
func TestPrometheus3ScrapesUTF8Names(t *testing.T) {
	bin := prometheus3Binary(t)
	for _, tc := range []struct {
		name string
		// path and body are pushed with PUT (text format).
		path, body string
		// goName, goLabel: a gauge pushed with client_golang (protobuf,
		// names unescaped) to {job="p3_utf8",instance="pb"}, when goName is
		// set.
		goName, goLabel string
		// want is describeNamed of {job="p3_utf8"} without push_*.
		want []string
	}{
		{
			name: "dots in metric names, label names and path label names arrive as pushed",
			path: "/metrics/job/p3_utf8/U__path_2e_label/text",
			body: `# HELP "e2e.p3.utf8.temperature" A gauge with a dotted name.
# TYPE "e2e.p3.utf8.temperature" gauge
{"e2e.p3.utf8.temperature","room.name"="a"} 21.5
# HELP e2e_p3_utf8_runs_total A legacy counter with a dotted label.
# TYPE e2e_p3_utf8_runs_total counter
e2e_p3_utf8_runs_total{"dotted.label"="x"} 3
# HELP "e2e.p3.utf8.duration_seconds" A histogram with a dotted name.
# TYPE "e2e.p3.utf8.duration_seconds" histogram
{"e2e.p3.utf8.duration_seconds_bucket",le="1"} 1
{"e2e.p3.utf8.duration_seconds_bucket",le="+Inf"} 2
{"e2e.p3.utf8.duration_seconds_sum"} 2.5
{"e2e.p3.utf8.duration_seconds_count"} 2
`,
			goName:  "e2e.p3.utf8.pb_value",
			goLabel: "pb.label",
			want: []string{
				`"e2e.p3.utf8.duration_seconds_bucket"{"job"="p3_utf8","le"="+Inf","path.label"="text"} 2`,
				`"e2e.p3.utf8.duration_seconds_bucket"{"job"="p3_utf8","le"="1.0","path.label"="text"} 1`,
				`"e2e.p3.utf8.duration_seconds_count"{"job"="p3_utf8","path.label"="text"} 2`,
				`"e2e.p3.utf8.duration_seconds_sum"{"job"="p3_utf8","path.label"="text"} 2.5`,
				`"e2e.p3.utf8.pb_value"{"instance"="pb","job"="p3_utf8","pb.label"="y"} 5`,
				`"e2e.p3.utf8.temperature"{"job"="p3_utf8","path.label"="text","room.name"="a"} 21.5`,
				`"e2e_p3_utf8_runs_total"{"dotted.label"="x","job"="p3_utf8","path.label"="text"} 3`,
			},
		},
		{
			name: "a colon in a label name, from the body or the path, arrives as pushed",
			path: "/metrics/job/p3_utf8/U__path_3a_label/text",
			body: `# HELP e2e_p3_utf8_colon A gauge with a colon in a label name.
# TYPE e2e_p3_utf8_colon gauge
e2e_p3_utf8_colon{"x:y"="1"} 7
`,
			want: []string{
				`"e2e_p3_utf8_colon"{"job"="p3_utf8","path:label"="text","x:y"="1"} 7`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startGateway(t, "--push.enable-utf8-names")
			pushText(t, g, http.MethodPut, tc.path, tc.body)
			if tc.goName != "" {
				reg := prometheus.NewRegistry()
				gauge := prometheus.NewGauge(prometheus.GaugeOpts{
					Name: tc.goName, Help: "A gauge pushed by client_golang.",
					ConstLabels: prometheus.Labels{tc.goLabel: "y"},
				})
				gauge.Set(5)
				reg.MustRegister(gauge)
				// client_golang escapes names with underscores unless its
				// format says otherwise.
				format := expfmt.NewFormat(expfmt.TypeProtoDelim).WithEscapingScheme(model.NoEscaping)
				pusher := push.New(g.URL, "p3_utf8").Grouping("instance", "pb").Gatherer(reg).Format(format)
				if err := pusher.Push(); err != nil {
					t.Fatalf("client_golang push: %v", err)
				}
			}
			p := startPrometheusBinary(t, bin, scrapeConfig(g))
			p.requireQuery(t, `{job="p3_utf8",__name__!~"push_.*"}`, lines(tc.want...))
			p.requireTargetHealthy(t)
		})
	}
}

// TestPrometheus3ScrapesNativeHistograms pushes a native histogram with
// client_golang (protobuf) and lets Prometheus 3 with native histogram
// scraping on (scrape_native_histograms: true, which makes it ask for
// protobuf first) scrape the gateway: the histogram arrives as one native
// histogram series with its count and sum, classic histograms and summaries
// pushed as text beside it arrive as classic series, and after a DELETE the
// native series goes stale.
func TestPrometheus3ScrapesNativeHistograms(t *testing.T) {
	bin := prometheus3Binary(t)
	g := startGateway(t)

	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:                        "e2e_p3_native_seconds",
		Help:                        "A native histogram.",
		NativeHistogramBucketFactor: 1.1,
	})
	reg.MustRegister(h)
	for _, v := range []float64{0, 0.5, 1.5, 1.5, -2} {
		h.Observe(v)
	}
	if err := push.New(g.URL, "p3_native").Grouping("instance", "h1").Gatherer(reg).Push(); err != nil {
		t.Fatalf("client_golang push: %v", err)
	}
	pushText(t, g, http.MethodPut, "/metrics/job/p3_classic", `# HELP e2e_p3_classic_seconds A classic histogram.
# TYPE e2e_p3_classic_seconds histogram
e2e_p3_classic_seconds_bucket{le="1"} 1
e2e_p3_classic_seconds_bucket{le="+Inf"} 2
e2e_p3_classic_seconds_sum 3
e2e_p3_classic_seconds_count 2
# HELP e2e_p3_classic_bytes A summary.
# TYPE e2e_p3_classic_bytes summary
e2e_p3_classic_bytes{quantile="0.5"} 10
e2e_p3_classic_bytes_sum 30
e2e_p3_classic_bytes_count 3
`)
	p := startPrometheusBinary(t, bin, scrapeConfig(g, "scrape_native_histograms: true"))

	// One series, and it is a native histogram: histogram_count ignores
	// float samples, so classic _bucket/_sum/_count series would show in the
	// first query and not in the second.
	p.requireQuery(t, `count by (__name__) ({job="p3_native",__name__!~"push_.*"})`,
		`"e2e_p3_native_seconds"{} 1`)
	p.requireQuery(t, `histogram_count(e2e_p3_native_seconds)`,
		`""{"instance"="h1","job"="p3_native"} 5`)
	p.requireQuery(t, `histogram_sum(e2e_p3_native_seconds)`,
		`""{"instance"="h1","job"="p3_native"} 1.5`)
	p.requireQuery(t, `{job="p3_classic",__name__!~"push_.*"}`, lines(
		`"e2e_p3_classic_bytes"{"job"="p3_classic","quantile"="0.5"} 10`,
		`"e2e_p3_classic_bytes_count"{"job"="p3_classic"} 3`,
		`"e2e_p3_classic_bytes_sum"{"job"="p3_classic"} 30`,
		`"e2e_p3_classic_seconds_bucket"{"job"="p3_classic","le"="+Inf"} 2`,
		`"e2e_p3_classic_seconds_bucket"{"job"="p3_classic","le"="1.0"} 1`,
		`"e2e_p3_classic_seconds_count"{"job"="p3_classic"} 2`,
		`"e2e_p3_classic_seconds_sum"{"job"="p3_classic"} 3`,
	))
	// The buckets as pushed: schema 3 (factor 1.1), the default zero
	// threshold 2^-128; [rule lower upper count], rule 1 is a negative
	// bucket, 3 the zero bucket.
	p.requireQuery(t, "e2e_p3_native_seconds", `"e2e_p3_native_seconds"{"instance"="h1","job"="p3_native"} `+
		`histogram{count=5,sum=1.5,buckets=[[1 -2 -1.8340080864093422 1] [3 -2.938735877055719e-39 2.938735877055719e-39 1] `+
		`[0 0.45850202160233555 0.5 1] [0 1.414213562373095 1.5422108254079407 2]]}`)
	p.requireTargetHealthy(t)

	mustStatus(t, http.StatusAccepted, http.MethodDelete, g.url("/metrics/job/p3_native/instance/h1"), nil)
	p.requireQuery(t, `{job="p3_native"}`, "")
}

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
{"e2e.pt.dotted_celsius","room.name"="a"} 1
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

// lines sorts want lines and joins them the way describeNamed does.
func lines(l ...string) string {
	l = slices.Clone(l)
	slices.Sort(l)
	return strings.Join(l, "\n")
}
