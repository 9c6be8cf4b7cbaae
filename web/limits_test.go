package web

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pushgate/pushgate/limits"
	"github.com/pushgate/pushgate/store"
)

// newLimitedHandler returns a handler over a store with lim, logging at
// info level and above into the returned buffer.
func newLimitedHandler(t *testing.T, lim limits.Limits) (*Handler, *store.Store, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	st := store.New(store.Options{Limits: lim, Logger: logger})
	h, err := New(st, prometheus.NewRegistry(), Options{MaxBodyBytes: 1 << 20, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	return h, st, &logs
}

func TestLimitAnswers(t *testing.T) {
	lim := limits.Limits{MaxSeriesPerPush: 2, MaxLabelsPerSeries: 4, MaxLabelNameLength: 8, MaxLabelValueLength: 8, MaxGroups: 2, MaxSeries: 100}
	long := strings.Repeat("x", 9)
	cases := []struct {
		name     string
		path     string
		body     string
		wantCode int
		reason   string
		wantBody string
	}{
		{"too many series is a 400", "/metrics/job/j", "m{a=\"1\"} 1\nm{a=\"2\"} 1\nm{a=\"3\"} 1\n", 400, "too_many_series", "push has more than 2 series; --push.max-series is 2"},
		{"too many labels is a 400", "/metrics/job/j", "m{a=\"1\",b=\"2\",c=\"3\"} 1\n", 400, "too_many_labels", `metric "m" has a series with 5 labels`},
		{"a long label name in the body is a 400", "/metrics/job/j", "m{" + long + "=\"1\"} 1\n", 400, "label_name_too_long", "--push.max-label-name-length is 8"},
		{"a long label value in the body is a 400", "/metrics/job/j", "m{a=\"" + long + "\"} 1\n", 400, "label_value_too_long", "--push.max-label-value-length is 8"},
		{"a long job in the path is a 400", "/metrics/job/" + long, "m 1\n", 400, "label_value_too_long", `grouping key: value of label "job" has 9 bytes`},
		{"a long base64 path value is a 400", "/metrics/job/j/a@base64/eHh4eHh4eHh4", "m 1\n", 400, "label_value_too_long", `value of label "a" has 9 bytes`},
		{"a long label name in the path is a 400", "/metrics/job/j/" + long + "/v", "m 1\n", 400, "label_name_too_long", "--push.max-label-name-length is 8"},
		{"a third group in a store of two is a 507", "/metrics/job/c", "m 1\n", 507, "store_full_groups", "--store.max-groups is 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, st, logs := newLimitedHandler(t, lim)
			for _, job := range []string{"a", "b"} {
				if w := do(t, h, http.MethodPut, "/metrics/job/"+job, []byte("m 1\n"), nil); w.Code != 200 {
					t.Fatalf("setup push: %d %s", w.Code, w.Body)
				}
			}
			before := st.Stats()
			w := do(t, h, http.MethodPut, tc.path, []byte(tc.body), nil)
			body := strings.TrimSuffix(w.Body.String(), "\n")
			if w.Code != tc.wantCode || !strings.Contains(body, tc.wantBody) || strings.Contains(body, "\n") {
				t.Fatalf("got %d %q, want %d with %q on one line", w.Code, body, tc.wantCode, tc.wantBody)
			}
			if after := st.Stats(); after != before {
				t.Fatalf("a rejected push changed the store: %+v → %+v", before, after)
			}
			counter := fmt.Sprintf(`pushgate_rejected_requests_total{handler="push",reason=%q} 1`, tc.reason)
			if !strings.Contains(scrapeText(t, h), counter) {
				t.Fatalf("scrape lacks %s", counter)
			}
			// One warn line (rate-limited, see rejectlog.go), nothing else.
			if lines := strings.Split(strings.TrimSpace(logs.String()), "\n"); len(lines) != 1 ||
				!strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "reason="+tc.reason) {
				t.Fatalf("want one warn line with reason=%s, got: %s", tc.reason, logs)
			}
		})
	}
}

func TestAFullStoreStillTakesPushesToItsGroupsAndDeletes(t *testing.T) {
	h, _, _ := newLimitedHandler(t, limits.Limits{MaxGroups: 1, MaxSeries: 4})
	if w := do(t, h, http.MethodPut, "/metrics/job/a", []byte("m{i=\"1\"} 1\nm{i=\"2\"} 1\n"), nil); w.Code != 200 {
		t.Fatalf("first push: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, http.MethodPut, "/metrics/job/a", []byte("m{i=\"1\"} 2\nm{i=\"2\"} 2\n"), nil); w.Code != 200 {
		t.Fatalf("replace at full: %d %s", w.Code, w.Body)
	}
	w := do(t, h, http.MethodPost, "/metrics/job/a", []byte("n 1\n"), nil)
	if w.Code != http.StatusInsufficientStorage || !strings.Contains(w.Body.String(), "--store.max-series is 4") {
		t.Fatalf("growing a full store: %d %q, want 507", w.Code, w.Body)
	}
	if w := do(t, h, http.MethodDelete, "/metrics/job/a", nil, nil); w.Code != 202 {
		t.Fatalf("delete: %d", w.Code)
	}
	if w := do(t, h, http.MethodPut, "/metrics/job/b", []byte("n 1\n"), nil); w.Code != 200 {
		t.Fatalf("push after delete: %d %s", w.Code, w.Body)
	}
}

func TestLimitsAndUsageAreExposed(t *testing.T) {
	h, _, _ := newLimitedHandler(t, limits.Limits{MaxSeriesPerPush: 7, MaxGroups: 5})
	do(t, h, http.MethodPut, "/metrics/job/a", []byte("m 1\n"), nil)
	text := scrapeText(t, h)
	for _, want := range []string{
		`pushgate_limit{name="push.max-series"} 7`,
		`pushgate_limit{name="store.max-groups"} 5`,
		`pushgate_limit{name="store.max-series"} 0`,
		`pushgate_limit{name="push.max-body-bytes"} 1.048576e+06`,
		"pushgate_groups 1",
		"pushgate_series 3",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
}
