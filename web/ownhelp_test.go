package web

import (
	"net/http"
	"strings"
	"testing"
)

// TestTheGatewaysHelpWinsForAFamilyItSharesWithAGroup pins that the HELP of
// a family the gateway and a group both hold is the gateway's, from the
// first scrape on: before the gateway's vector has a sample as well as
// after.
func TestTheGatewaysHelpWinsForAFamilyItSharesWithAGroup(t *testing.T) {
	h, st := newTestHandler(t, Options{})
	st.Reserve(OwnFamilies())
	body := "# HELP pushgate_rejected_requests_total Pushed by a client.\n# TYPE pushgate_rejected_requests_total counter\npushgate_rejected_requests_total 3\n"
	if w := do(t, h, http.MethodPut, "/metrics/job/j", []byte(body), nil); w.Code != http.StatusOK {
		t.Fatalf("push: %d %s", w.Code, w.Body)
	}
	want := "# HELP pushgate_rejected_requests_total " + rejectedHelp + "\n"
	for _, when := range []string{"before the gateway's first sample", "after it"} {
		got := scrapeText(t, h)
		if !strings.Contains(got, want) || !strings.Contains(got, `pushgate_rejected_requests_total{instance="",job="j"} 3`) {
			t.Errorf("%s: the scrape lacks %q or the pushed series:\n%s", when, want, got)
		}
		do(t, h, http.MethodPut, "/metrics/job/j/a/b/c", nil, nil) // an odd path: rejected
	}
}
