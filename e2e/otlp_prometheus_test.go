package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// otlpOracleCase is one setting of TestOTLPStoresWhatPrometheus3Stores:
// the gateway's flags and the same settings as Prometheus' otlp: block.
type otlpOracleCase struct {
	name string
	// flags are the gateway's OTLP flags.
	flags []string
	// otlpConfig is the body of Prometheus' otlp: block (indented by 2).
	otlpConfig string
	// path is where the gateway receives the requests (default
	// /otlp/v1/metrics); urlKey is the group key a grouping path names,
	// which every resource of a request then belongs to.
	path   string
	urlKey map[string]string
	// instanceKept says the gateway's group key holds
	// service.instance.id as instance (--otlp.group-by=service.instance.id);
	// otherwise the instance label of Prometheus' series is dropped before
	// comparing (see normalisedSeries).
	instanceKept bool
}

// otlpOracleCases cover each translation strategy (the UTF-8 ones with
// UTF-8 names on the gateway; Prometheus 3 validates names as UTF-8 by
// default), and the promotion settings.
var otlpOracleCases = []otlpOracleCase{
	{
		name:       "UnderscoreEscapingWithSuffixes, the default, and nothing promoted",
		otlpConfig: "  translation_strategy: UnderscoreEscapingWithSuffixes\n",
	},
	{
		name: "promoted resource attributes, identifying attributes kept in target_info, scope metadata, instance in the key",
		flags: []string{
			"--otlp.promote-resource-attributes=host.name",
			"--otlp.promote-resource-attributes=deployment.environment",
			"--otlp.keep-identifying-resource-attributes",
			"--otlp.promote-scope-metadata",
			"--otlp.group-by=service.instance.id",
		},
		otlpConfig: `  translation_strategy: UnderscoreEscapingWithSuffixes
  promote_resource_attributes: [host.name, deployment.environment]
  keep_identifying_resource_attributes: true
  promote_scope_metadata: true
`,
		instanceKept: true,
	},
	{
		name:       "the grouping path's job and instance instead of the resource's",
		otlpConfig: "  translation_strategy: UnderscoreEscapingWithSuffixes\n",
		path:       "/otlp/job/e2e_otlp_url/instance@base64/aG9zdC8x/v1/metrics",
		urlKey:     map[string]string{"job": "e2e_otlp_url", "instance": "host/1"},
	},
	{
		name:       "UnderscoreEscapingWithoutSuffixes",
		flags:      []string{"--otlp.translation-strategy=UnderscoreEscapingWithoutSuffixes"},
		otlpConfig: "  translation_strategy: UnderscoreEscapingWithoutSuffixes\n",
	},
	{
		name:       "NoUTF8EscapingWithSuffixes with UTF-8 names",
		flags:      []string{"--otlp.translation-strategy=NoUTF8EscapingWithSuffixes", "--push.enable-utf8-names"},
		otlpConfig: "  translation_strategy: NoUTF8EscapingWithSuffixes\n",
	},
	{
		name:       "NoTranslation with UTF-8 names",
		flags:      []string{"--otlp.translation-strategy=NoTranslation", "--push.enable-utf8-names"},
		otlpConfig: "  translation_strategy: NoTranslation\n",
	},
}

// TestOTLPStoresWhatPrometheus3Stores sends the same OTLP requests to
// Prometheus 3's own OTLP receiver (server A) and to the gateway, which a
// second Prometheus 3 (server B) scrapes with honor_labels and native
// histograms on, and requires both servers to hold the same series with the
// same values: every kind of point (gauge, counter, non-monotonic sum,
// explicit and exponential histograms, summary), units, dotted names,
// colliding attributes, target_info, NoRecordedValue, and deltas, which A
// sums with its otlp-deltatocumulative feature (one process, consecutive
// windows) and the gateway accumulates; once per translation strategy and
// once with resource and scope promotion.
func TestOTLPStoresWhatPrometheus3Stores(t *testing.T) {
	bin := prometheus3Binary(t)
	for _, tc := range otlpOracleCases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, bin) })
	}
}

// run starts the gateway and both Prometheus servers of the case, sends
// the requests, and compares what A and B hold.
func (tc otlpOracleCase) run(t *testing.T, bin string) {
	g := startGateway(t, tc.flags...)
	a := startPrometheusOTLPReceiver(t, bin, tc.otlpConfig)
	// scrape_native_histograms: true makes Prometheus 3.16 propose
	// PrometheusProto first (its DefaultProtoFirstScrapeProtocols), the only
	// format that carries native histograms.
	b := startPrometheusBinary(t, bin, scrapeConfig(g, "scrape_native_histograms: true"))

	start := time.Now().Add(-5 * time.Second).Truncate(time.Millisecond)
	utf8Names := slices.Contains(tc.flags, "--push.enable-utf8-names")
	for i, md := range oracleRequests(start, utf8Names) {
		body, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
		if err != nil {
			t.Fatalf("request %d: marshal: %v", i+1, err)
		}
		mustStatus(t, http.StatusOK, http.MethodPost, a.URL+"/api/v1/otlp/v1/metrics", body, "Content-Type", "application/x-protobuf")
		path := "/otlp/v1/metrics"
		if tc.path != "" {
			path = tc.path
		}
		r := mustStatus(t, http.StatusOK, http.MethodPost, g.url(path), body, "Content-Type", "application/x-protobuf")
		requireNoPartialSuccess(t, i+1, r)
	}

	// A holds only what its receiver stored; B also scrapes the gateway's
	// own metrics (job="pushgate", from its scrape config) and each group's
	// push times, which A has no counterpart of.
	fromA := func(escape bool, skipNative bool) func() ([]string, error) {
		return func() ([]string, error) {
			res, err := a.query(`{__name__=~".+"}`)
			return normalisedSeries(res, normalisation{dropInstance: !tc.instanceKept, escape: escape, skipNative: skipNative, key: tc.urlKey}), err
		}
	}
	scraped := func(p *prometheusServer, skip []string) func() ([]string, error) {
		return func() ([]string, error) {
			res, err := p.query(`{__name__=~".+",__name__!~"push_time_seconds|push_failure_time_seconds",job!="pushgate"}`)
			return normalisedSeries(res, normalisation{skipNames: skip}), err
		}
	}
	if !utf8Names {
		requireSameSeries(t, "Prometheus' receiver (A)", fromA(false, false), "the gateway scraped by Prometheus (B)", scraped(b, nil), b)
		return
	}
	// Prometheus 3.16 asks for protobuf without an escaping parameter,
	// which means names escaped with underscores: B sees A's series under
	// escaped names, native histograms included. A third server, C, asks
	// for text 1.0.0 with escaping=allow-utf-8 and sees the names as the
	// strategy made them, but not native histograms (text cannot carry
	// them), so C is compared without them.
	requireSameSeries(t, "Prometheus' receiver (A), names escaped with underscores", fromA(true, false), "the gateway scraped by Prometheus (B)", scraped(b, nil), b)
	c := startPrometheusBinary(t, bin, scrapeConfig(g, "scrape_protocols: [PrometheusText1.0.0]"))
	natives, err := a.query(`{__name__=~".+"}`)
	if err != nil {
		t.Fatal(err)
	}
	requireSameSeries(t, "Prometheus' receiver (A) without native histograms", fromA(false, true),
		"the gateway scraped as text with UTF-8 names by Prometheus (C)", scraped(c, nativeNames(natives)), c)
}

// requireSameSeries polls both sides until they hold the same non-empty
// list of series, and fails with the difference after promTimeout; p is
// the server scraping the gateway, whose target state the failure shows.
func requireSameSeries(t *testing.T, wantName string, want func() ([]string, error), gotName string, got func() ([]string, error), p *prometheusServer) {
	t.Helper()
	deadline := time.Now().Add(promTimeout)
	for {
		w, errW := want()
		g, errG := got()
		if errW == nil && errG == nil && len(w) > 0 && slices.Equal(w, g) {
			t.Logf("%d series equal in %s and %s", len(w), wantName, gotName)
			return
		}
		if time.Now().After(deadline) {
			tg, terr := p.target()
			t.Fatalf("%s and %s differ after %v (errors %v, %v; target %+v %v):\n%s",
				wantName, gotName, promTimeout, errW, errG, tg, terr, seriesDiff(w, g))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// nativeNames returns the names of the native histogram series in res.
func nativeNames(res []promSample) []string {
	var out []string
	for _, s := range res {
		if _, native, _ := s.nativeHistogram(); native {
			out = append(out, s.Metric["__name__"])
		}
	}
	return out
}

// requireNoPartialSuccess fails when the gateway's answer to request n
// reports refused points.
func requireNoPartialSuccess(t *testing.T, n int, r response) {
	t.Helper()
	resp := pmetricotlp.NewExportResponse()
	if err := resp.UnmarshalProto(r.Body); err != nil {
		t.Fatalf("request %d: the gateway's answer is not an ExportMetricsServiceResponse: %v (%q)", n, err, r.Body)
	}
	if ps := resp.PartialSuccess(); ps.RejectedDataPoints() != 0 || ps.ErrorMessage() != "" {
		t.Fatalf("request %d: the gateway refused %d points: %s", n, ps.RejectedDataPoints(), ps.ErrorMessage())
	}
}

// normalisation says how normalisedSeries treats a query result.
type normalisation struct {
	// dropInstance removes the instance label: Prometheus' receiver takes
	// it from service.instance.id, which is not in the gateway's group key
	// by default (a batch job gets a new id per run, and a gateway that
	// never expires anything must not gain a group per run; see the
	// issue's group-key rule).
	dropInstance bool
	// escape escapes metric and label names with underscores, as the
	// gateway serves them to a scraper that does not ask for UTF-8 names.
	escape bool
	// skipNative leaves native histogram series out; skipNames leaves out
	// series named as one of these names or as their _count, _sum and
	// _bucket series.
	skipNative bool
	skipNames  []string
	// key, when set, replaces job and instance: a request to a grouping
	// path belongs to the path's group, whose labels its series carry.
	key map[string]string
}

// normalisedSeries renders query results as sorted "name{labels} value"
// lines that compare equal when Prometheus would treat the series as the
// same: le and quantile are compared as numbers (Prometheus' receiver
// writes le="1", a scrape gives le="1.0"), values as floats (NaN equal to
// NaN) or as the query API's native histogram, and empty labels are absent
// (the query API never shows them). job needs no normalisation: both
// derive it from service.namespace and service.name, the gateway as its
// group's job label.
func normalisedSeries(res []promSample, n normalisation) []string {
	out := make([]string, 0, len(res))
	for _, s := range res {
		name := s.Metric["__name__"]
		_, native, _ := s.nativeHistogram()
		if (n.skipNative && native) || skippedName(name, n.skipNames) {
			continue
		}
		var ls []string
		for k, v := range n.key {
			ls = append(ls, fmt.Sprintf("%q=%q", k, v))
		}
		for k, v := range s.Metric {
			switch {
			case k == "__name__", v == "", n.dropInstance && k == "instance":
				continue
			case n.key != nil && (k == "job" || k == "instance"):
				continue
			case k == "le" || k == "quantile":
				v = numberString(v)
			}
			if n.escape {
				k = model.EscapeName(k, model.UnderscoreEscaping)
			}
			ls = append(ls, fmt.Sprintf("%q=%q", k, v))
		}
		sort.Strings(ls)
		if n.escape {
			name = model.EscapeName(name, model.UnderscoreEscaping)
		}
		val := s.valueString()
		if !native {
			val = numberString(val)
		}
		out = append(out, fmt.Sprintf("%q{%s} %s", name, strings.Join(ls, ","), val))
	}
	sort.Strings(out)
	return out
}

// skippedName reports whether name is one of names or one of their
// classic series.
func skippedName(name string, names []string) bool {
	for _, n := range names {
		if name == n || name == n+"_count" || name == n+"_sum" || name == n+"_bucket" {
			return true
		}
	}
	return false
}

// numberString renders a number in one spelling ("1.0" and "1" alike);
// what does not parse is kept.
func numberString(s string) string {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// seriesDiff lists the lines only want has (-) and only got has (+).
func seriesDiff(want, got []string) string {
	in := func(l []string) map[string]bool {
		m := make(map[string]bool, len(l))
		for _, s := range l {
			m[s] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for _, s := range want {
		if !g[s] {
			b.WriteString("- A only: " + s + "\n")
		}
	}
	for _, s := range got {
		if !w[s] {
			b.WriteString("+ B only: " + s + "\n")
		}
	}
	fmt.Fprintf(&b, "(%d series in A, %d in B)", len(want), len(got))
	return b.String()
}

// startPrometheusOTLPReceiver starts Prometheus 3 with its OTLP receiver
// on, the given otlp: block, no scrape jobs, and delta-to-cumulative
// conversion (otlp-deltatocumulative), which sums the delta points of one
// process in memory as the gateway does durably.
func startPrometheusOTLPReceiver(t *testing.T, bin, otlpConfig string) *prometheusServer {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	config := "global:\n  evaluation_interval: 1s\notlp:\n" + otlpConfig
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	for attempt := 0; attempt < 5; attempt++ {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		p := startProcess(t, "prometheus-otlp", bin,
			"--config.file="+cfg,
			"--storage.tsdb.path="+filepath.Join(dir, fmt.Sprintf("data%d", attempt)),
			"--web.listen-address="+addr,
			"--web.enable-otlp-receiver",
			"--enable-feature=otlp-deltatocumulative",
		)
		s := &prometheusServer{process: p, URL: "http://" + addr}
		if waitReadyTimeout(t, p, s.URL+"/-/ready", promTimeout) {
			return s
		}
		if !strings.Contains(p.log(), "address already in use") {
			t.Fatalf("prometheus with the OTLP receiver did not become ready; log:\n%s", p.logTail(16<<10))
		}
		p.signal(os.Kill)
	}
	t.Fatal("prometheus with the OTLP receiver: no free port")
	return nil
}
