package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
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
// settings, scrape a gateway without UTF-8 names, and finds every pushed
// counter, gauge, classic histogram and summary series with its name, labels
// and value through the query API.
//
// Prometheus 3 asks for OpenMetrics 1.0.0 and 0.0.1 first, then text 1.0.0
// and 0.0.4, names escaped allow-utf-8, and always adds */*; the gateway
// answers any scraper that accepts text with text, so no configuration of
// Prometheus 3 gets OpenMetrics from it (promtool checks that format).
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

// utf8NamesCase is one store of TestPrometheus3ScrapesUTF8Names.
type utf8NamesCase struct {
	name string
	// path and body are pushed with PUT (text format).
	path, body string
	// goName, goLabel: a gauge pushed with client_golang (protobuf, names
	// unescaped) to {job="p3_utf8",instance="pb"}, when goName is set.
	goName, goLabel string
	// want is describeNamed of {job="p3_utf8"} without push_*.
	want []string
}

// TestPrometheus3ScrapesUTF8Names lets Prometheus 3, which asks for
// allow-utf-8 escaping by default, scrape a gateway started with
// --push.enable-utf8-names, and finds pushed series whose metric and label
// names hold characters outside the legacy alphabet under exactly their
// pushed names, with their values.
func TestPrometheus3ScrapesUTF8Names(t *testing.T) {
	bin := prometheus3Binary(t)
	for _, tc := range []utf8NamesCase{
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
		t.Run(tc.name, func(t *testing.T) { tc.run(t, bin) })
	}
}

// run pushes the case's store to a gateway with UTF-8 names, lets Prometheus 3
// bin scrape it, and queries the series.
func (tc utf8NamesCase) run(t *testing.T, bin string) {
	t.Helper()
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
		// client_golang escapes names with underscores unless its format
		// says otherwise.
		format := expfmt.NewFormat(expfmt.TypeProtoDelim).WithEscapingScheme(model.NoEscaping)
		pusher := push.New(g.URL, "p3_utf8").Grouping("instance", "pb").Gatherer(reg).Format(format)
		if err := pusher.Push(); err != nil {
			t.Fatalf("client_golang push: %v", err)
		}
	}
	p := startPrometheusBinary(t, bin, scrapeConfig(g))
	p.requireQuery(t, `{job="p3_utf8",__name__!~"push_.*"}`, lines(tc.want...))
	p.requireTargetHealthy(t)
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

// lines sorts want lines and joins them the way describeNamed does.
func lines(l ...string) string {
	l = slices.Clone(l)
	slices.Sort(l)
	return strings.Join(l, "\n")
}
