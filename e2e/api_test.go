package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/encoding/prototext"
)

// apiBody is the body pushed for the API and negotiation tests: a gauge with
// HELP, a counter, a summary and a histogram.
const apiBody = `# HELP api_gauge A gauge.
# TYPE api_gauge gauge
api_gauge 1.5
# TYPE api_counter counter
api_counter 3
# TYPE api_summary summary
api_summary{quantile="0.5"} 1
api_summary_sum 3
api_summary_count 2
# TYPE api_hist histogram
api_hist_bucket{le="1"} 1
api_hist_bucket{le="+Inf"} 2
api_hist_sum 3
api_hist_count 2
`

// TestAPIStatus checks /api/v1/status: the envelope, build information keys,
// every reference flag with its value as a string, and the start time.
func TestAPIStatus(t *testing.T) {
	g := startGateway(t, "--web.enable-admin-api")
	r := mustStatus(t, http.StatusOK, http.MethodGet, g.url("/api/v1/status"), nil)
	requireMediaType(t, r.Header.Get("Content-Type"), "application/json")
	if got := r.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Fatalf("Access-Control-Allow-Origin %q, want *", got)
	}
	var res struct {
		Status string `json:"status"`
		Data   struct {
			BuildInformation map[string]string `json:"build_information"`
			Flags            map[string]string `json:"flags"`
			StartTime        string            `json:"start_time"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.Body, &res); err != nil {
		t.Fatalf("status JSON: %v\n%s", err, r.Body)
	}
	if res.Status != "success" {
		t.Fatalf("status %q", res.Status)
	}
	for _, k := range []string{"branch", "buildDate", "buildUser", "goVersion", "revision", "version"} {
		if _, ok := res.Data.BuildInformation[k]; !ok {
			t.Errorf("build_information has no %q: %v", k, res.Data.BuildInformation)
		}
	}
	for k, want := range map[string]string{
		"log.format":                     "logfmt",
		"log.level":                      "info",
		"persistence.file":               "",
		"persistence.interval":           "5m0s",
		"push.disable-consistency-check": "false",
		"push.enable-utf8-names":         "false",
		"web.config.file":                "",
		"web.enable-admin-api":           "true",
		"web.enable-lifecycle":           "false",
		"web.external-url":               "",
		"web.listen-address":             g.Addr,
		"web.route-prefix":               "",
		"web.systemd-socket":             "false",
		"web.telemetry-path":             "/metrics",
	} {
		if got, ok := res.Data.Flags[k]; !ok || got != want {
			t.Errorf("flag %s = %q (present %v), want %q", k, got, ok, want)
		}
	}
	if st, err := time.Parse(time.RFC3339Nano, res.Data.StartTime); err != nil || time.Since(st) > time.Hour || time.Since(st) < -time.Minute {
		t.Errorf("start_time %q: %v", res.Data.StartTime, err)
	}
}

// apiGroup is one group of /api/v1/metrics, keyed by family name besides
// "labels" and "last_push_successful".
type apiGroup map[string]json.RawMessage

// apiFamily is a family inside an apiGroup.
type apiFamily struct {
	TimeStamp string           `json:"time_stamp"`
	Type      string           `json:"type"`
	Help      string           `json:"help"`
	Metrics   []map[string]any `json:"metrics"`
}

// apiMetrics fetches /api/v1/metrics and returns its groups.
func apiMetrics(t *testing.T, g *gateway) []apiGroup {
	t.Helper()
	r := mustStatus(t, http.StatusOK, http.MethodGet, g.url("/api/v1/metrics"), nil)
	requireMediaType(t, r.Header.Get("Content-Type"), "application/json")
	var res struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(r.Body, &res); err != nil || res.Status != "success" {
		t.Fatalf("metrics JSON: %v\n%s", err, r.Body)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(res.Data), []byte("[")) {
		t.Fatalf("data is not an array: %s", res.Data)
	}
	var groups []apiGroup
	if err := json.Unmarshal(res.Data, &groups); err != nil {
		t.Fatal(err)
	}
	return groups
}

// TestAPIMetrics checks the JSON shape of /api/v1/metrics (REFERENCE §4.2):
// an empty array for an empty store, then per group its grouping labels,
// last_push_successful and one object per family with typed values as
// strings.
func TestAPIMetrics(t *testing.T) {
	g := startGateway(t)
	if groups := apiMetrics(t, g); len(groups) != 0 {
		t.Fatalf("empty store: %d groups", len(groups))
	}
	pushText(t, g, http.MethodPut, "/metrics/job/api/instance/i1", apiBody)
	pushText(t, g, http.MethodPut, "/metrics/job/api2", "api_other 2\n")

	groups := apiMetrics(t, g)
	if len(groups) != 2 {
		t.Fatalf("%d groups, want 2", len(groups))
	}
	var grp apiGroup
	for _, gr := range groups {
		var labels map[string]string
		if err := json.Unmarshal(gr["labels"], &labels); err != nil {
			t.Fatal(err)
		}
		if labels["job"] == "api" {
			if len(labels) != 2 || labels["instance"] != "i1" {
				t.Fatalf("labels %v", labels)
			}
			grp = gr
		} else if len(labels) != 1 || labels["job"] != "api2" {
			t.Fatalf("labels %v, want only job=api2 (no instance)", labels)
		}
	}
	if grp == nil {
		t.Fatal("group job=api not found")
	}
	if string(grp["last_push_successful"]) != "true" {
		t.Fatalf("last_push_successful %s", grp["last_push_successful"])
	}
	family := func(name string) apiFamily {
		t.Helper()
		var f apiFamily
		if err := json.Unmarshal(grp[name], &f); err != nil {
			t.Fatalf("family %s: %v (%s)", name, err, grp[name])
		}
		if _, err := time.Parse(time.RFC3339Nano, f.TimeStamp); err != nil {
			t.Fatalf("family %s time_stamp %q: %v", name, f.TimeStamp, err)
		}
		if len(f.Metrics) != 1 {
			t.Fatalf("family %s: %d metrics", name, len(f.Metrics))
		}
		ls, _ := f.Metrics[0]["labels"].(map[string]any)
		if ls["job"] != "api" || ls["instance"] != "i1" {
			t.Fatalf("family %s labels %v", name, ls)
		}
		return f
	}
	if f := family("api_gauge"); f.Type != "GAUGE" || f.Help != "A gauge." || f.Metrics[0]["value"] != "1.5" {
		t.Fatalf("api_gauge %+v", f)
	}
	if f := family("api_counter"); f.Type != "COUNTER" || f.Metrics[0]["value"] != "3" {
		t.Fatalf("api_counter %+v", f)
	}
	if f := family("api_summary"); f.Type != "SUMMARY" || f.Metrics[0]["count"] != "2" || f.Metrics[0]["sum"] != "3" ||
		f.Metrics[0]["quantiles"].(map[string]any)["0.5"] != "1" {
		t.Fatalf("api_summary %+v", f)
	}
	if f := family("api_hist"); f.Type != "HISTOGRAM" || f.Metrics[0]["count"] != "2" || f.Metrics[0]["sum"] != "3" ||
		f.Metrics[0]["buckets"].(map[string]any)["1"] != "1" || f.Metrics[0]["buckets"].(map[string]any)["+Inf"] != "2" {
		t.Fatalf("api_hist %+v", f)
	}
	if f := family("push_time_seconds"); f.Type != "GAUGE" || f.Metrics[0]["value"] == "0" {
		t.Fatalf("push_time_seconds %+v", f)
	}
}

// TestAdminWipe checks PUT /api/v1/admin/wipe: 404 without
// --web.enable-admin-api, 202 with it, and then an empty store.
func TestAdminWipe(t *testing.T) {
	t.Run("disabled", func(t *testing.T) {
		g := startGateway(t)
		pushText(t, g, http.MethodPut, "/metrics/job/w1", "wipe_metric 1\n")
		mustStatus(t, http.StatusNotFound, http.MethodPut, g.url("/api/v1/admin/wipe"), nil)
		scrape(t, g).requireValue(t, "wipe_metric", lbl("job", "w1", "instance", ""), 1)
	})
	t.Run("enabled", func(t *testing.T) {
		g := startGateway(t, "--web.enable-admin-api")
		for _, j := range []string{"w1", "w2", "w3"} {
			pushText(t, g, http.MethodPut, "/metrics/job/"+j+"/instance/x", "wipe_metric 1\n")
		}
		r := mustStatus(t, http.StatusAccepted, http.MethodPut, g.url("/api/v1/admin/wipe"), nil)
		if len(r.Body) != 0 {
			t.Fatalf("wipe body %q, want empty", r.Body)
		}
		eventually(t, waitTimeout, func() error {
			mfs := scrape(t, g)
			if names := mfs.pushedNames(); len(names) != 0 {
				return errorf("families left after wipe: %v", names)
			}
			return nil
		})
		if groups := apiMetrics(t, g); len(groups) != 0 {
			t.Fatalf("%d groups after wipe", len(groups))
		}
	})
}

// TestHealthAndReady checks /-/healthy and /-/ready.
func TestHealthAndReady(t *testing.T) {
	g := startGateway(t)
	for _, p := range []string{"/-/healthy", "/-/ready"} {
		r := mustStatus(t, http.StatusOK, http.MethodGet, g.url(p), nil)
		if !strings.HasPrefix(string(r.Body), "OK") {
			t.Errorf("%s body %q, want OK", p, r.Body)
		}
	}
}

// TestLifecycle checks /-/quit (403 unless --web.enable-lifecycle, then 200
// and a clean exit) and a clean exit on SIGTERM.
func TestLifecycle(t *testing.T) {
	t.Run("quit disabled", func(t *testing.T) {
		g := startGateway(t)
		for _, m := range []string{http.MethodPut, http.MethodPost} {
			r := mustStatus(t, http.StatusForbidden, m, g.url("/-/quit"), nil)
			requireOneLine(t, r)
		}
		mustStatus(t, http.StatusOK, http.MethodGet, g.url("/-/ready"), nil)
	})
	t.Run("quit enabled", func(t *testing.T) {
		g := startGateway(t, "--web.enable-lifecycle")
		mustStatus(t, http.StatusOK, http.MethodPut, g.url("/-/quit"), nil)
		code, ok := g.wait(30 * time.Second)
		if !ok {
			t.Fatal("gateway still running 30s after /-/quit")
		}
		if code != 0 {
			t.Fatalf("exit code %d after /-/quit, want 0", code)
		}
	})
	t.Run("SIGTERM", func(t *testing.T) {
		g := startGateway(t)
		pushText(t, g, http.MethodPut, "/metrics/job/term", "term_metric 1\n")
		if code := g.signal(syscall.SIGTERM); code != 0 {
			t.Fatalf("exit code %d after SIGTERM, want 0", code)
		}
	})
}

// TestRoutePrefix checks that --web.route-prefix and --web.external-url move
// every route under the prefix.
func TestRoutePrefix(t *testing.T) {
	for _, flag := range []string{"--web.route-prefix=/pg", "--web.external-url=http://gateway.example/ext/"} {
		t.Run(flag, func(t *testing.T) {
			g := startGateway(t, flag)
			root := "http://" + g.Addr
			pushText(t, g, http.MethodPut, "/metrics/job/prefixed/instance/p1", "prefix_metric 1\n")
			scrape(t, g).requireValue(t, "prefix_metric", lbl("job", "prefixed", "instance", "p1"), 1)
			mustStatus(t, http.StatusOK, http.MethodGet, g.url("/-/healthy"), nil)
			mustStatus(t, http.StatusOK, http.MethodGet, g.url("/api/v1/status"), nil)
			mustStatus(t, http.StatusNotFound, http.MethodGet, root+"/metrics", nil)
			mustStatus(t, http.StatusAccepted, http.MethodDelete, g.url("/metrics/job/prefixed/instance/p1"), nil)
		})
	}
	t.Run("telemetry path", func(t *testing.T) {
		g := startGateway(t, "--web.telemetry-path=/scrape")
		pushText(t, g, http.MethodPut, "/metrics/job/tp", "tp_metric 1\n")
		r := mustStatus(t, http.StatusOK, http.MethodGet, g.url("/scrape"), nil)
		mfs, err := parseText(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		mfs.requireValue(t, "tp_metric", lbl("job", "tp", "instance", ""), 1)
	})
}

// TestHeadMetrics checks that HEAD /metrics answers 200 with the scrape's
// headers and no body (the reference answers 405).
func TestHeadMetrics(t *testing.T) {
	g := startGateway(t)
	pushText(t, g, http.MethodPut, "/metrics/job/head", "head_metric 1\n")
	r := mustStatus(t, http.StatusOK, http.MethodHead, g.url("/metrics"), nil)
	requireMediaType(t, r.Header.Get("Content-Type"), "text/plain", "version", "0.0.4", "charset", "utf-8")
	if len(r.Body) != 0 {
		t.Fatalf("HEAD body %q", r.Body)
	}
}

// TestScrapeNegotiation checks the scrape formats chosen by Accept: text
// 0.0.4 by default, OpenMetrics 1.0.0 ending in "# EOF", text 1.0.0 with
// escaping, protobuf delimited, Prometheus 3's default Accept, and gzip.
func TestScrapeNegotiation(t *testing.T) {
	g := startGateway(t)
	pushText(t, g, http.MethodPut, "/metrics/job/neg/instance/n1", apiBody)
	key := lbl("job", "neg", "instance", "n1")

	t.Run("default text 0.0.4", func(t *testing.T) {
		mfs := scrape(t, g)
		mfs.requireValue(t, "api_gauge", key, 1.5)
	})
	t.Run("OpenMetrics", func(t *testing.T) {
		r := mustStatus(t, http.StatusOK, http.MethodGet, g.url("/metrics"), nil,
			"Accept", "application/openmetrics-text; version=1.0.0")
		requireMediaType(t, r.Header.Get("Content-Type"), "application/openmetrics-text", "version", "1.0.0", "charset", "utf-8")
		if !bytes.HasSuffix(r.Body, []byte("# EOF\n")) {
			t.Fatalf("OpenMetrics body does not end with # EOF:\n%s", clip(r.Body))
		}
		if !bytes.Contains(r.Body, []byte(`api_gauge{instance="n1",job="neg"} 1.5`)) {
			t.Fatalf("OpenMetrics body lacks api_gauge:\n%s", clip(r.Body))
		}
		// A counter may come out as OpenMetrics' api_counter_total (what
		// client_golang's encoder does) or keep its pushed name.
		if !regexp.MustCompile(`(?m)^api_counter(_total)?\{instance="n1",job="neg"\} 3(\.0)?$`).Match(r.Body) {
			t.Fatalf("OpenMetrics body lacks api_counter:\n%s", clip(r.Body))
		}
	})
	t.Run("Prometheus 3 default Accept", func(t *testing.T) {
		// pushgate serves the text format to every scraper that accepts
		// it, so that le and quantile values are spelled as the reference
		// spells them (OpenMetrics would turn le="1" into le="1.0").
		r := mustStatus(t, http.StatusOK, http.MethodGet, g.url("/metrics"), nil,
			"Accept", "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1")
		requireMediaType(t, r.Header.Get("Content-Type"), "text/plain", "escaping", "allow-utf-8")
	})
	t.Run("text 1.0.0 with escaping", func(t *testing.T) {
		r := mustStatus(t, http.StatusOK, http.MethodGet, g.url("/metrics"), nil,
			"Accept", "text/plain;version=1.0.0;escaping=allow-utf-8")
		// prometheus/common v0.72 knows no text 1.0.0 encoder; 0.0.4 with the
		// escaping echoed is what client_golang servers answer and what
		// Prometheus 3 accepts.
		requireMediaType(t, r.Header.Get("Content-Type"), "text/plain", "charset", "utf-8", "escaping", "allow-utf-8")
		if _, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); params["version"] != "1.0.0" && params["version"] != "0.0.4" {
			t.Fatalf("Content-Type %q: version not 1.0.0 or 0.0.4", r.Header.Get("Content-Type"))
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := p.TextToMetricFamilies(bytes.NewReader(r.Body))
		if err != nil {
			t.Fatal(err)
		}
		families(mfs).requireValue(t, "api_gauge", key, 1.5)
	})
	t.Run("protobuf delimited", func(t *testing.T) {
		r := mustStatus(t, http.StatusOK, http.MethodGet, g.url("/metrics"), nil,
			"Accept", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited")
		requireMediaType(t, r.Header.Get("Content-Type"), "application/vnd.google.protobuf",
			"proto", "io.prometheus.client.MetricFamily", "encoding", "delimited")
		dec := expfmt.NewDecoder(bytes.NewReader(r.Body), expfmt.NewFormat(expfmt.TypeProtoDelim))
		mfs := families{}
		var last string
		for {
			mf := &dto.MetricFamily{}
			if err := dec.Decode(mf); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("protobuf decode: %v", err)
			}
			if mf.GetName() <= last {
				t.Fatalf("family %s after %s: not in name order, or repeated", mf.GetName(), last)
			}
			last = mf.GetName()
			mfs[mf.GetName()] = mf
		}
		mfs.requireValue(t, "api_gauge", key, 1.5)
		if h := mfs.require(t, "api_hist", key).GetHistogram(); h.GetSampleCount() != 2 || h.GetSampleSum() != 3 {
			t.Fatalf("api_hist %v", h)
		}
	})
	for _, enc := range []string{"text", "compact-text"} {
		t.Run("protobuf "+enc, func(t *testing.T) {
			r := mustStatus(t, http.StatusOK, http.MethodGet, g.url("/metrics"), nil,
				"Accept", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding="+enc)
			requireMediaType(t, r.Header.Get("Content-Type"), "application/vnd.google.protobuf",
				"proto", "io.prometheus.client.MetricFamily", "encoding", enc)
			sep := "\n\n"
			if enc == "compact-text" {
				sep = "\n"
			}
			mfs := families{}
			for _, msg := range strings.Split(strings.TrimRight(string(r.Body), "\n"), sep) {
				mf := &dto.MetricFamily{}
				if err := prototext.Unmarshal([]byte(msg), mf); err != nil {
					t.Fatalf("%q is not a MetricFamily in the protobuf text format: %v", msg, err)
				}
				mfs[mf.GetName()] = mf
			}
			mfs.requireValue(t, "api_gauge", key, 1.5)
		})
	}
	t.Run("gzip", func(t *testing.T) {
		r := mustStatus(t, http.StatusOK, http.MethodGet, g.url("/metrics"), nil, "Accept-Encoding", "gzip")
		body := gunzipScrape(t, r)
		requireMediaType(t, r.Header.Get("Content-Type"), "text/plain", "version", "0.0.4", "charset", "utf-8")
		mfs, err := parseText(body)
		if err != nil {
			t.Fatal(err)
		}
		mfs.requireValue(t, "api_gauge", key, 1.5)
	})
}
