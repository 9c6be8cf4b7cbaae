package e2e

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestOwnNamesAreReservedBeforeTheFirstPush pins issue 13's defect 5: the
// journal's own metrics register only once the journal is open, and were
// not reserved, so a pushed histogram under one of their names was merged
// under the gateway's TYPE.
func TestOwnNamesAreReservedBeforeTheFirstPush(t *testing.T) {
	g := startGateway(t, "--persistence.file="+filepath.Join(t.TempDir(), "journal"))
	for _, body := range []string{
		"# TYPE pushgate_journal_syncs_total histogram\npushgate_journal_syncs_total_bucket{le=\"+Inf\"} 1\npushgate_journal_syncs_total_sum 1\npushgate_journal_syncs_total_count 1\n",
		"# TYPE pushgate_journal_file_bytes counter\npushgate_journal_file_bytes 1\n",
		"# TYPE pushgate_journal_syncs gauge\npushgate_journal_syncs 1\n",
	} {
		r := do(t, http.MethodPut, g.url("/metrics/job/own"), []byte(body))
		if r.Status != http.StatusBadRequest {
			t.Errorf("push colliding with an own name answered %d, want 400:\n%s\n%s", r.Status, body, r.Body)
		}
	}
	fams := scrape(t, g)
	for _, name := range []string{"pushgate_journal_syncs_total", "pushgate_journal_file_bytes"} {
		mf := fams[name]
		if mf == nil {
			t.Fatalf("%s missing from the scrape", name)
		}
		for _, m := range mf.Metric {
			if strings.Contains(labelString(m.Label), "own") {
				t.Errorf("%s holds a pushed series: %s", name, labelString(m.Label))
			}
		}
	}
}
