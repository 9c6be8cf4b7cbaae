package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"
)

// promTimeout bounds how long Prometheus may take to scrape and show a change
// (scrape interval 1 s; a loaded CI machine is slow to start it).
const promTimeout = 90 * time.Second

// prometheusServer is a running Prometheus started by a test.
type prometheusServer struct {
	*process
	URL string
}

// startPrometheus starts the real Prometheus on a free loopback port with
// a config scraping the gateway every second with honor_labels: true.
func startPrometheus(t *testing.T, g *gateway) *prometheusServer {
	t.Helper()
	metricsPath := strings.TrimPrefix(g.URL, "http://"+g.Addr) + "/metrics"
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: pushgate
    honor_labels: true
    metrics_path: %q
    static_configs:
      - targets: [%q]
`, metricsPath, g.Addr)
	return startPrometheusWithConfig(t, config)
}

// promSample is one element of an instant-query vector result.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
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
		lines = append(lines, fmt.Sprintf("{%s} %v", strings.Join(ls, ","), s.Value[1]))
	}
	sort.Strings(lines)
	return strings.Join(lines, "; ")
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
	eventually(t, promTimeout, func() error {
		r, err := doRequest(bgCtx, http.MethodGet, p.URL+"/api/v1/targets?state=active", nil)
		if err != nil {
			return err
		}
		var res struct {
			Data struct {
				ActiveTargets []struct {
					ScrapePool string `json:"scrapePool"`
					Health     string `json:"health"`
					LastError  string `json:"lastError"`
				} `json:"activeTargets"`
			} `json:"data"`
		}
		if err := json.Unmarshal(r.Body, &res); err != nil {
			return err
		}
		if n := len(res.Data.ActiveTargets); n != 1 {
			return fmt.Errorf("%d active targets: %s", n, r.Body)
		}
		tg := res.Data.ActiveTargets[0]
		if tg.ScrapePool != "pushgate" || tg.Health != "up" || tg.LastError != "" {
			return fmt.Errorf("target %+v, want pool pushgate, health up, no error", tg)
		}
		return nil
	})

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
