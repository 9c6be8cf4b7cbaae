package e2e

import (
	"net/http"
	"testing"
)

// These tests pin the places where pushgate deliberately differs from the
// reference Pushgateway (bugs not copied). They fail against the reference.

// TestEncodedSlashStaysInValue checks that %2F inside a path segment is part
// of the value, where the reference splits the path on it and silently
// builds a wrong grouping key.
func TestEncodedSlashStaysInValue(t *testing.T) {
	g := startGateway(t)
	pushText(t, g, http.MethodPut, "/metrics/job/a%2Fb/x/c%2Fd", "slash_metric 1\n")
	mfs := scrape(t, g)
	mfs.requireValue(t, "slash_metric", lbl("job", "a/b", "x", "c/d", "instance", ""), 1)

	mustStatus(t, http.StatusAccepted, http.MethodDelete, g.url("/metrics/job/a%2Fb/x/c%2Fd"), nil)
	eventually(t, waitTimeout, func() error {
		if len(scrape(t, g).series("slash_metric", nil)) > 0 {
			return errorf("still present after DELETE")
		}
		return nil
	})
}

// TestRejectedPushCannotPoisonStore replays the reference's poisoning case:
// PUT /metrics/job/s1, then PUT /metrics/job/s1/instance@base64/= (whose
// push_time_seconds series would duplicate the first group's). The second
// push is refused, and /metrics and later pushes keep working.
func TestRejectedPushCannotPoisonStore(t *testing.T) {
	g := startGateway(t)
	pushText(t, g, http.MethodPut, "/metrics/job/s1", "poison_metric 1\n")
	r := do(t, http.MethodPut, g.url("/metrics/job/s1/instance@base64/="), []byte("poison_other 2\n"))
	if r.Status != http.StatusBadRequest {
		t.Fatalf("second push: got %s, want 400", r)
	}
	requireOneLine(t, r)

	mfs := scrape(t, g) // 200, exact Content-Type, parses, no duplicate series
	mfs.requireValue(t, "poison_metric", lbl("job", "s1", "instance", ""), 1)
	mfs.requireAbsent(t, "poison_other", lbl("job", "s1"))

	pushText(t, g, http.MethodPut, "/metrics/job/s2", "poison_metric 2\n")
	pushText(t, g, http.MethodPost, "/metrics/job/s1", "poison_metric 3\n")
	mfs = scrape(t, g)
	mfs.requireValue(t, "poison_metric", lbl("job", "s2", "instance", ""), 2)
	mfs.requireValue(t, "poison_metric", lbl("job", "s1", "instance", ""), 3)
	if n := len(mfs.series("push_time_seconds", lbl("job", "s1"))); n != 1 {
		t.Fatalf("push_time_seconds for job s1: %d series, want 1", n)
	}
}

// TestConflictingHelpIsDeterministic pushes one family with different HELP
// texts from two groups: every scrape must show the same single HELP text
// (the reference picks a random winner per scrape).
func TestConflictingHelpIsDeterministic(t *testing.T) {
	g := startGateway(t)
	pushText(t, g, http.MethodPut, "/metrics/job/h1", "# HELP help_metric help one\nhelp_metric 1\n")
	pushText(t, g, http.MethodPut, "/metrics/job/h2", "# HELP help_metric help two\nhelp_metric 2\n")
	pushText(t, g, http.MethodPut, "/metrics/job/h3", "# HELP help_metric help three\nhelp_metric 3\n")
	first := scrape(t, g)["help_metric"].GetHelp()
	if first != "help one" && first != "help two" && first != "help three" {
		t.Fatalf("HELP %q is none of the pushed texts", first)
	}
	for i := 0; i < 60; i++ {
		mfs := scrape(t, g)
		if got := mfs["help_metric"].GetHelp(); got != first {
			t.Fatalf("scrape %d: HELP %q, earlier scrapes %q", i, got, first)
		}
		if n := len(mfs["help_metric"].GetMetric()); n != 3 {
			t.Fatalf("scrape %d: %d series, want 3", i, n)
		}
	}
}
