package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// rollbackPushes are the pushes the rollback test makes: every metric type,
// HELP texts, a merge, a label value with "/" (base64 in the path), a
// group without instance, and a push that fails (a type conflict), which
// stamps its group's push_failure_time_seconds.
var rollbackPushes = []struct {
	method, path, body string
	status             int
}{
	{http.MethodPut, "/metrics/job/backup/instance/db1",
		"# HELP backup_duration_seconds How long the backup took.\n# TYPE backup_duration_seconds gauge\nbackup_duration_seconds 812.5\n" +
			"# TYPE backup_files_total counter\nbackup_files_total{kind=\"full\"} 1234\nbackup_files_total{kind=\"incremental\"} 17\n", http.StatusOK},
	// The same HELP in both groups: where HELP texts differ, the reference
	// picks one at random on every scrape.
	{http.MethodPut, "/metrics/job/backup/instance/db2",
		"# HELP backup_duration_seconds How long the backup took.\n# TYPE backup_duration_seconds gauge\nbackup_duration_seconds 17.25\n", http.StatusOK},
	{http.MethodPut, "/metrics/job/batch/path@base64/L3Zhci90bXA",
		"# HELP batch_latency_seconds Latency.\n# TYPE batch_latency_seconds histogram\nbatch_latency_seconds_bucket{le=\"0.5\"} 3\nbatch_latency_seconds_bucket{le=\"+Inf\"} 5\nbatch_latency_seconds_sum 4.25\nbatch_latency_seconds_count 5\n" +
			"# TYPE batch_rpc_seconds summary\nbatch_rpc_seconds{quantile=\"0.9\"} 0.12\nbatch_rpc_seconds_sum 9\nbatch_rpc_seconds_count 70\n", http.StatusOK},
	{http.MethodPost, "/metrics/job/batch/path@base64/L3Zhci90bXA", "batch_items 42\n", http.StatusOK},
	{http.MethodPut, "/metrics/job/backup/instance/db2", "# TYPE backup_duration_seconds counter\nbackup_duration_seconds 1\n", http.StatusBadRequest},
}

// TestRollbackToTheReferenceServesTheSameGroups is the way back for an
// operator who swapped the reference Pushgateway for pushgate: it fills a
// durable pushgate, stops it, exports its state with
// --persistence.export-reference, starts Debian's prometheus-pushgateway on
// the exported file, and checks that the reference serves the same groups,
// series, values, HELP texts and push times (push_time_seconds,
// push_failure_time_seconds, and each family's time_stamp in
// /api/v1/metrics).
func TestRollbackToTheReferenceServesTheSameGroups(t *testing.T) {
	if os.Getenv("PUSHGATE_BINARY") != "" {
		t.Skip("tests pushgate's own export flag, which PUSHGATE_BINARY may not have")
	}
	reference := requireTool(t, "prometheus-pushgateway")
	bin := gatewayBinary(t)
	dir := t.TempDir()
	journal := filepath.Join(dir, "pushgate.journal")
	exported := filepath.Join(dir, "pushgateway.data")

	g := startGateway(t, "--persistence.file="+journal)
	for _, p := range rollbackPushes {
		mustStatus(t, p.status, p.method, g.url(p.path), []byte(p.body))
	}
	wantScrape := scrape(t, g)
	wantAPI := apiSummary(t, apiMetrics(t, g))
	if code := g.signal(os.Interrupt); code != 0 {
		t.Fatalf("pushgate exited %d", code)
	}

	out, err := exec.Command(bin, "--persistence.file="+journal, "--persistence.export-reference="+exported).CombinedOutput()
	if err != nil {
		t.Fatalf("export: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `msg="exported the state in the reference Pushgateway's format"`) || !strings.Contains(string(out), "groups=3") {
		t.Fatalf("export log:\n%s", out)
	}

	r := startGatewayBinary(t, reference, "--persistence.file="+exported)
	gotScrape := scrape(t, r)
	if got, want := gotScrape.pushedDump(), wantScrape.pushedDump(); got != want {
		t.Errorf("the reference serves:\n%s\n\npushgate served:\n%s", got, want)
	}
	for _, name := range wantScrape.pushedNames() {
		if got, want := gotScrape[name].GetHelp(), wantScrape[name].GetHelp(); got != want {
			t.Errorf("HELP of %s: the reference serves %q, pushgate served %q", name, got, want)
		}
	}
	if failed := wantScrape.find("push_failure_time_seconds", lbl("job", "backup", "instance", "db2")); failed == nil || sampleValue(failed) == 0 {
		t.Fatal("the failed push left no failure time to compare")
	}
	gotAPI := apiSummary(t, apiMetrics(t, r))
	if len(gotAPI) != len(wantAPI) {
		t.Fatalf("the reference's API has %d lines, pushgate's had %d:\n%s\n\nwant:\n%s", len(gotAPI), len(wantAPI), strings.Join(gotAPI, "\n"), strings.Join(wantAPI, "\n"))
	}
	for i := range wantAPI {
		if gotAPI[i] != wantAPI[i] {
			t.Errorf("API: the reference has %s, pushgate had %s", gotAPI[i], wantAPI[i])
		}
	}
}

// apiSummary reduces /api/v1/metrics to sorted lines: per group its labels
// and last_push_successful, and per family its type and time_stamp (to the
// microsecond: the reference reads push times back from float seconds).
func apiSummary(t *testing.T, groups []apiGroup) []string {
	t.Helper()
	var lines []string
	for _, g := range groups {
		var labels map[string]string
		if err := json.Unmarshal(g["labels"], &labels); err != nil {
			t.Fatal(err)
		}
		var names []string
		for k := range labels {
			names = append(names, fmt.Sprintf("%s=%q", k, labels[k]))
		}
		sort.Strings(names)
		key := "{" + strings.Join(names, ",") + "}"
		lines = append(lines, fmt.Sprintf("%s last_push_successful=%s", key, g["last_push_successful"]))
		for name, raw := range g {
			if name == "labels" || name == "last_push_successful" {
				// Not a family: the group's own fields. Every other key
				// is a family object, in pushgate as in the reference.
				continue
			}
			var f apiFamily
			if err := json.Unmarshal(raw, &f); err != nil {
				t.Fatalf("family %s: %v", name, err)
			}
			ts, err := time.Parse(time.RFC3339Nano, f.TimeStamp)
			if err != nil {
				t.Fatalf("family %s time_stamp %q: %v", name, f.TimeStamp, err)
			}
			lines = append(lines, fmt.Sprintf("%s %s %s time_stamp=%s", key, name, f.Type, ts.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)))
		}
	}
	sort.Strings(lines)
	return lines
}
