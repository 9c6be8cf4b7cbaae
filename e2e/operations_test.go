package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"go.yaml.in/yaml/v2"
)

// providedElsewhere are the metric names the alerting rules and the dashboard
// may use besides the gateway's own and pushed ones: Prometheus' series for
// every target, and the interval a job declares (deploy/prometheus/alerts.yml
// says how).
var providedElsewhere = []string{
	"up", "scrape_duration_seconds", "scrape_samples_scraped",
	"expected_push_interval_seconds", "job:expected_push_interval_seconds",
}

// promqlWords are PromQL's keywords, which look like metric names.
var promqlWords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset", "inf", "nan"}

var (
	promqlStrings   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promqlMatchers  = regexp.MustCompile(`\{[^{}]*\}`)
	promqlRanges    = regexp.MustCompile(`\[[^\[\]]*\]`)
	promqlGrouping  = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promqlLabelVals = regexp.MustCompile(`\blabel_values\(([^,()]*(?:\{[^{}]*\})?)\s*,\s*[a-zA-Z_]\w*\s*\)`)
	promqlIdent     = regexp.MustCompile(`\$?[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
)

// metricNames returns the metric names a PromQL expression (or a Grafana
// label_values(metric, label) query) reads: identifiers that are not
// functions, keywords, label names in matchers or groupings, strings,
// durations or Grafana variables.
func metricNames(expr string) []string {
	expr = promqlLabelVals.ReplaceAllString(expr, "$1")
	expr = promqlStrings.ReplaceAllString(expr, `""`)
	expr = promqlMatchers.ReplaceAllString(expr, " ")
	expr = promqlRanges.ReplaceAllString(expr, " ")
	expr = promqlGrouping.ReplaceAllString(expr, " ")
	var names []string
	for _, m := range promqlIdent.FindAllString(expr, -1) {
		if strings.HasPrefix(m, "$") || strings.HasSuffix(m, "(") || slices.Contains(promqlWords, strings.ToLower(m)) {
			continue
		}
		if !slices.Contains(names, m) {
			names = append(names, m)
		}
	}
	sort.Strings(names)
	return names
}

func TestMetricNamesFindsTheMetricsAnExpressionReads(t *testing.T) {
	cases := []struct {
		name, expr string
		want       []string
	}{
		{"a rate summed by a label reads one metric", `sum by (reason) (rate(pushgate_rejected_requests_total{job="$job", handler="push"}[$__rate_interval]))`, []string{"pushgate_rejected_requests_total"}},
		{"a Grafana label_values query reads its metric, not its label", `label_values(pushgateway_build_info{job="$job"}, instance)`, []string{"pushgateway_build_info"}},
		{"vector matching with a recording rule reads both", `(time() - (push_time_seconds > 0)) > on(job) group_left() job:expected_push_interval_seconds`, []string{"job:expected_push_interval_seconds", "push_time_seconds"}},
		{"set operators and numbers read nothing themselves", `a > 25 * 3600 unless b unless on(job) c or d`, []string{"a", "b", "c", "d"}},
		{"a string argument is not a metric", `label_replace(vector(1), "job", "backup", "", "")`, nil},
		{"a comparison with bool reads one metric", `up == bool 0`, []string{"up"}},
	}
	for _, tc := range cases {
		if got := metricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("%s: metricNames(%q) = %q, want %q", tc.name, tc.expr, got, tc.want)
		}
	}
}

// exposedNames starts the gateway with every optional feature that adds own
// metrics (persistence, a permission file), pushes one good and one bad
// group, and returns every metric name it serves (with the _sum, _count and
// _bucket series of summaries and histograms).
func exposedNames(t *testing.T) map[string]bool {
	t.Helper()
	dir := t.TempDir()
	perms := filepath.Join(dir, "permissions.yml")
	writePermissions(t, perms, "credentials:\n  - name: ops\n    bearer_token_hash: \""+bcryptHash(t, "ops-token")+"\"\n    admin: true\n")
	g := startGateway(t, "--persistence.file="+filepath.Join(dir, "journal"), "--web.permissions-file="+perms)
	auth := []string{"Authorization", "Bearer ops-token"}
	mustStatus(t, http.StatusOK, http.MethodPut, g.url("/metrics/job/ops/instance/a"), []byte("# TYPE ops_gauge gauge\nops_gauge 1\n"), auth...)
	mustStatus(t, http.StatusBadRequest, http.MethodPut, g.url("/metrics/job/ops/instance/b"), []byte("# TYPE ops_gauge counter\nops_gauge 1\n"), auth...)
	names := map[string]bool{}
	for name, mf := range scrape(t, g) {
		names[name] = true
		switch mf.GetType() {
		case dto.MetricType_SUMMARY:
			names[name+"_sum"], names[name+"_count"] = true, true
		case dto.MetricType_HISTOGRAM:
			names[name+"_sum"], names[name+"_count"], names[name+"_bucket"] = true, true, true
		}
	}
	for _, n := range providedElsewhere {
		names[n] = true
	}
	return names
}

// dashboardQueries returns every PromQL query of a Grafana dashboard: the
// panels' targets and the template variables' queries.
func dashboardQueries(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	var walk func(v any, key string)
	walk = func(v any, key string) {
		switch v := v.(type) {
		case map[string]any:
			if v["type"] == "datasource" {
				return // a data source variable: its query is a plugin type
			}
			for k, c := range v {
				walk(c, k)
			}
		case []any:
			for _, c := range v {
				walk(c, key)
			}
		case string:
			if key == "expr" || key == "query" || key == "definition" {
				out = append(out, v)
			}
		}
	}
	walk(doc, "")
	return out
}

// TestTheAlertsAndTheDashboardQueryOnlyMetricsPushgateExposes reads every
// expression of deploy/prometheus/alerts.yml and every query of
// deploy/grafana/pushgate.json, and fails on a metric name that the running
// gateway does not serve (and that is not Prometheus' own per-target series
// or the documented per-job interval).
func TestTheAlertsAndTheDashboardQueryOnlyMetricsPushgateExposes(t *testing.T) {
	if os.Getenv("PUSHGATE_BINARY") != "" {
		t.Skip("checks pushgate's own metric names")
	}
	exposed := exposedNames(t)

	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert, Record, Expr string
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(moduleRoot, "deploy", "prometheus", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	exprs := map[string][]string{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs["alerts.yml "+r.Alert+r.Record] = []string{r.Expr}
		}
	}
	queries := dashboardQueries(t, filepath.Join(moduleRoot, "deploy", "grafana", "pushgate.json"))
	exprs["pushgate.json"] = queries
	if len(exprs) < 9 || len(queries) < 20 {
		t.Fatalf("found %d rules and %d dashboard queries; the files were not read as expected", len(exprs)-1, len(queries))
	}
	used := 0
	for where, list := range exprs {
		for _, expr := range list {
			for _, name := range metricNames(expr) {
				used++
				if !exposed[name] {
					t.Errorf("%s: %q reads %s, which pushgate does not expose", where, expr, name)
				}
			}
		}
	}
	t.Logf("%d metric reads checked in %d rules and %d dashboard queries", used, len(exprs)-1, len(queries))
}

// TestTheAlertingRulesPassPromtool checks deploy/prometheus/alerts.yml with
// `promtool check rules` and runs its unit tests, alerts_test.yml, with
// `promtool test rules`: Debian's promtool (Prometheus 2), and Prometheus 3's
// when scripts/prometheus3.sh has built it.
func TestTheAlertingRulesPassPromtool(t *testing.T) {
	tools := []string{requireTool(t, "promtool")}
	if dir, err := exec.Command("bash", filepath.Join(moduleRoot, "scripts", "prometheus3.sh"), "--no-build").Output(); err == nil {
		tools = append(tools, filepath.Join(strings.TrimSpace(string(dir)), "promtool"))
	} else {
		t.Log("Prometheus 3's promtool is not built; checking with Debian's only")
	}
	dir := filepath.Join(moduleRoot, "deploy", "prometheus")
	for _, tool := range tools {
		for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
			cmd := exec.Command(tool, args...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "SUCCESS") {
				t.Errorf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
			}
		}
	}
}

// TestTheDashboardQueriesAreValidPromQL writes every PromQL query of
// deploy/grafana/pushgate.json, with Grafana's variables filled in, as a
// recording rule and lets `promtool check rules` parse them.
func TestTheDashboardQueriesAreValidPromQL(t *testing.T) {
	promtool := requireTool(t, "promtool")
	fill := strings.NewReplacer("$__rate_interval", "5m", "$job", "pushgate", "$instance", ".*")
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	n := 0
	for _, q := range dashboardQueries(t, filepath.Join(moduleRoot, "deploy", "grafana", "pushgate.json")) {
		if strings.HasPrefix(q, "label_values(") {
			continue // Grafana's own function, not PromQL
		}
		n++
		quoted, _ := json.Marshal(fill.Replace(q))
		b.WriteString("      - record: dashboard_query_" + strconv.Itoa(n) + "\n        expr: " + string(quoted) + "\n")
	}
	path := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS: "+strconv.Itoa(n)+" rules found") {
		t.Fatalf("promtool check rules on the dashboard's %d queries: %v\n%s\n%s", n, err, out, b.String())
	}
}
