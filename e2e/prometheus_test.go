package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// promTimeout bounds how long Prometheus may take to scrape and show a change
// (scrape interval 1 s; a loaded CI machine is slow to start it). It is well
// below Prometheus' 5 min lookback delta, so a series that leaves an instant
// query within it was ended by a staleness marker, not by age.
const promTimeout = 90 * time.Second

// prometheusServer is a running Prometheus started by a test.
type prometheusServer struct {
	*process
	URL string
}

// startPrometheus starts Debian's Prometheus (2.42) on a free loopback port
// with a config scraping the gateway every second with honor_labels: true.
func startPrometheus(t *testing.T, g *gateway) *prometheusServer {
	t.Helper()
	return startPrometheusWithConfig(t, scrapeConfig(g))
}

// scrapeConfig returns a Prometheus configuration with one scrape job,
// "pushgate", that scrapes the gateway every second with honor_labels: true
// and otherwise the defaults of the Prometheus that reads it. Each of extra
// is one more line of that scrape config, such as
// "scrape_native_histograms: true".
func scrapeConfig(g *gateway, extra ...string) string {
	metricsPath := strings.TrimPrefix(g.URL, "http://"+g.Addr) + "/metrics"
	var more strings.Builder
	for _, line := range extra {
		more.WriteString("    " + line + "\n")
	}
	return fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: pushgate
    honor_labels: true
    metrics_path: %q
%s    static_configs:
      - targets: [%q]
`, metricsPath, more.String(), g.Addr)
}

// startPrometheusWithConfig starts Debian's Prometheus (2.42) with the given
// configuration on a free loopback port.
func startPrometheusWithConfig(t *testing.T, config string) *prometheusServer {
	t.Helper()
	return startPrometheusBinary(t, requireTool(t, "prometheus"), config)
}

// startPrometheusBinary starts the Prometheus binary bin with the given
// configuration on a free loopback port, retrying on a port race, and waits
// until it is ready.
func startPrometheusBinary(t *testing.T, bin, config string) *prometheusServer {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	for attempt := 0; attempt < 5; attempt++ {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		p := startProcess(t, "prometheus", bin,
			"--config.file="+cfg,
			"--storage.tsdb.path="+filepath.Join(dir, fmt.Sprintf("data%d", attempt)),
			"--web.listen-address="+addr,
		)
		s := &prometheusServer{process: p, URL: "http://" + addr}
		if waitReadyTimeout(t, p, s.URL+"/-/ready", promTimeout) {
			return s
		}
		if !strings.Contains(p.log(), "address already in use") {
			t.Fatalf("prometheus did not become ready; log:\n%s", p.logTail(16<<10))
		}
		p.signal(os.Kill)
	}
	t.Fatal("prometheus: no free port")
	return nil
}

// promSample is one element of an instant-query vector result: a float
// sample (Value) or a native histogram sample (Histogram).
type promSample struct {
	Metric    map[string]string  `json:"metric"`
	Value     [2]any             `json:"value"`
	Histogram [2]json.RawMessage `json:"histogram"`
}

// promHistogram is the value of a native histogram sample in Prometheus'
// query API.
type promHistogram struct {
	Count string `json:"count"`
	Sum   string `json:"sum"`
	// Buckets are [boundary rule, lower, upper, count]; the rule is a number,
	// the rest are strings.
	Buckets [][4]any `json:"buckets"`
}

// nativeHistogram returns the native histogram of s; ok is false for a float
// sample.
func (s promSample) nativeHistogram() (h promHistogram, ok bool, err error) {
	if len(s.Histogram[1]) == 0 {
		return h, false, nil
	}
	if err := json.Unmarshal(s.Histogram[1], &h); err != nil {
		return h, true, fmt.Errorf("native histogram %s: %w", s.Histogram[1], err)
	}
	return h, true, nil
}

// valueString renders the value of s: the float, or the count, sum and
// buckets of a native histogram.
func (s promSample) valueString() string {
	h, ok, err := s.nativeHistogram()
	switch {
	case err != nil:
		return err.Error()
	case ok:
		return fmt.Sprintf("histogram{count=%s,sum=%s,buckets=%v}", h.Count, h.Sum, h.Buckets)
	default:
		return fmt.Sprint(s.Value[1])
	}
}

// query runs an instant query and returns the vector result.
func (s *prometheusServer) query(q string) ([]promSample, error) {
	r, err := doRequest(bgCtx, http.MethodGet, s.URL+"/api/v1/query?query="+url.QueryEscape(q), nil)
	if err != nil {
		return nil, err
	}
	if r.Status != http.StatusOK {
		return nil, fmt.Errorf("query %q: %s", q, r)
	}
	var res struct {
		Status string `json:"status"`
		Data   struct {
			ResultType string       `json:"resultType"`
			Result     []promSample `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.Body, &res); err != nil {
		return nil, fmt.Errorf("query %q: %w", q, err)
	}
	if res.Status != "success" || res.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: %s", q, r.Body)
	}
	return res.Data.Result, nil
}

// describe renders samples as sorted "labels value" lines, without __name__.
func describe(samples []promSample) string {
	var lines []string
	for _, s := range samples {
		var ls []string
		for k, v := range s.Metric {
			if k == "__name__" {
				continue
			}
			ls = append(ls, fmt.Sprintf("%s=%q", k, v))
		}
		sort.Strings(ls)
		lines = append(lines, fmt.Sprintf("{%s} %s", strings.Join(ls, ","), s.valueString()))
	}
	sort.Strings(lines)
	return strings.Join(lines, "; ")
}

// describeNamed renders samples as sorted "name{labels} value" lines, one per
// line, with the metric name in front and label names quoted, so that a name
// that arrived escaped differently shows.
func describeNamed(samples []promSample) string {
	var lines []string
	for _, s := range samples {
		var ls []string
		for k, v := range s.Metric {
			if k == "__name__" {
				continue
			}
			ls = append(ls, fmt.Sprintf("%q=%q", k, v))
		}
		sort.Strings(ls)
		lines = append(lines, fmt.Sprintf("%q{%s} %s", s.Metric["__name__"], strings.Join(ls, ","), s.valueString()))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// promTarget is the state of a scrape target in Prometheus' targets API.
type promTarget struct {
	ScrapePool string `json:"scrapePool"`
	Health     string `json:"health"`
	LastError  string `json:"lastError"`
}

// target returns the one active target of s, which scrapes the gateway.
func (s *prometheusServer) target() (promTarget, error) {
	r, err := doRequest(bgCtx, http.MethodGet, s.URL+"/api/v1/targets?state=active", nil)
	if err != nil {
		return promTarget{}, err
	}
	var res struct {
		Data struct {
			ActiveTargets []promTarget `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.Body, &res); err != nil {
		return promTarget{}, fmt.Errorf("targets: %w: %s", err, r.Body)
	}
	if n := len(res.Data.ActiveTargets); n != 1 {
		return promTarget{}, fmt.Errorf("%d active targets: %s", n, r.Body)
	}
	return res.Data.ActiveTargets[0], nil
}

// requireTargetHealthy waits until the gateway target is up with no scrape
// error, and fails with Prometheus' last scrape error otherwise.
func (s *prometheusServer) requireTargetHealthy(t *testing.T) {
	t.Helper()
	eventually(t, promTimeout, func() error {
		tg, err := s.target()
		if err != nil {
			return err
		}
		if tg.ScrapePool != "pushgate" || tg.Health != "up" || tg.LastError != "" {
			return fmt.Errorf("target %+v, want pool pushgate, health up, no error", tg)
		}
		return nil
	})
}

// requireQuery polls the instant query q until describeNamed of its result
// is want. On timeout it fails with the last result and the target's last
// scrape error, which says why Prometheus did not ingest the scrape.
func (s *prometheusServer) requireQuery(t *testing.T, q, want string) {
	t.Helper()
	deadline := time.Now().Add(promTimeout)
	for {
		res, err := s.query(q)
		got := describeNamed(res)
		if err == nil && got == want {
			return
		}
		if time.Now().After(deadline) {
			tg, terr := s.target()
			if err == nil {
				err = fmt.Errorf("got\n%s\nwant\n%s", got, want)
			}
			t.Fatalf("query %s not as expected within %v: %v\ntarget: %+v %v", q, promTimeout, err, tg, terr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPrometheusScrapesPushedSeries starts a real Prometheus scraping the
// gateway with honor_labels: true, finds the pushed series with their job and
// instance labels and values through the query API, checks the target is
// healthy, and watches a deleted group's series disappear.
func TestPrometheusScrapesPushedSeries(t *testing.T) {
	g := startGateway(t)
	pushText(t, g, http.MethodPut, "/metrics/job/batch_a/instance/host1",
		"# TYPE e2e_prom_value gauge\ne2e_prom_value 42\n# TYPE e2e_prom_runs_total counter\ne2e_prom_runs_total 3\n")
	pushText(t, g, http.MethodPut, "/metrics/job/batch_b/instance/host2",
		"# TYPE e2e_prom_value gauge\ne2e_prom_value 7.5\n")
	pushText(t, g, http.MethodPut, "/metrics/job/batch_c",
		"# HELP e2e_prom_hist A histogram.\n# TYPE e2e_prom_hist histogram\ne2e_prom_hist_bucket{le=\"1\"} 2\ne2e_prom_hist_bucket{le=\"+Inf\"} 3\ne2e_prom_hist_sum 4.5\ne2e_prom_hist_count 3\n")
	p := startPrometheus(t, g)

	want := `{instance="host1",job="batch_a"} 42; {instance="host2",job="batch_b"} 7.5`
	eventually(t, promTimeout, func() error {
		res, err := p.query("e2e_prom_value")
		if err != nil {
			return err
		}
		if got := describe(res); got != want {
			return fmt.Errorf("e2e_prom_value = %s, want %s", got, want)
		}
		return nil
	})
	for q, want := range map[string]string{
		"e2e_prom_runs_total": `{instance="host1",job="batch_a"} 3`,
		// Prometheus 2 keeps le as written: "1" from text, "1.0" from OpenMetrics.
		`label_replace(e2e_prom_hist_bucket{le=~"1|1[.]0"}, "le", "1", "", "")`: `{job="batch_c",le="1"} 2`,
		"e2e_prom_hist_count":                      `{job="batch_c"} 3`,
		`up{job="pushgate"}`:                       fmt.Sprintf(`{instance=%q,job="pushgate"} 1`, g.Addr),
		`push_time_seconds{job="batch_a"} > 0`:     `{instance="host1",job="batch_a"}`,
		`push_failure_time_seconds{job="batch_b"}`: `{instance="host2",job="batch_b"} 0`,
	} {
		eventually(t, promTimeout, func() error {
			res, err := p.query(q)
			if err != nil {
				return err
			}
			got := describe(res)
			if got != want && !(strings.HasSuffix(q, "> 0") && len(res) == 1 && strings.HasPrefix(got, want)) {
				return fmt.Errorf("%s = %s, want %s", q, got, want)
			}
			return nil
		})
	}

	// The target is healthy and its scrape had no error.
	p.requireTargetHealthy(t)

	// A deleted group's series go stale and leave the instant query.
	mustStatus(t, http.StatusAccepted, http.MethodDelete, g.url("/metrics/job/batch_a/instance/host1"), nil)
	want = `{instance="host2",job="batch_b"} 7.5`
	eventually(t, promTimeout, func() error {
		res, err := p.query("e2e_prom_value")
		if err != nil {
			return err
		}
		if got := describe(res); got != want {
			return fmt.Errorf("after DELETE e2e_prom_value = %s, want %s", got, want)
		}
		res, err = p.query(`{job="batch_a"}`)
		if err != nil {
			return err
		}
		if len(res) != 0 {
			return fmt.Errorf("series of the deleted group remain: %s", describe(res))
		}
		return nil
	})
}
