package web

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// apiMetricsGroups fetches /api/v1/metrics and returns each group's keys,
// by job.
func apiMetricsGroups(t *testing.T, h http.Handler) map[string]map[string]json.RawMessage {
	t.Helper()
	rec := apiDo(h, http.MethodGet, "/api/v1/metrics")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /api/v1/metrics = %d: %s", rec.Code, rec.Body)
	}
	var body struct {
		Data []map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("decode: %v\n%s", err, rec.Body)
	}
	out := make(map[string]map[string]json.RawMessage, len(body.Data))
	for _, g := range body.Data {
		var labels map[string]string
		if err := json.Unmarshal(g["labels"], &labels); err != nil {
			t.Fatalf("labels %s: %v", g["labels"], err)
		}
		out[labels["job"]] = g
	}
	return out
}

func TestAPIMetricsHasTheLastPushFailureReason(t *testing.T) {
	const reasonKey = "last_push_failure_reason" // the documented name
	h, st := apiTestHandler(t)
	apiPushText(t, st, apiT0, "x 1\n", "job", "failing")
	// A family of the key's name is left out, with a reason or without.
	apiPushText(t, st, apiT0, "x 1\nlast_push_failure_reason 1\n", "job", "fine")
	apiPushText(t, st, apiT0, "last_push_failure_reason 1\ny 1\n", "job", "clash")
	reason := failPush(t, st, apiT0.Add(time.Second), "x{v=\"<b>\"} 1\nx{v=\"<b>\"} 2\n", "job", "failing")
	clashReason := failPush(t, st, apiT0.Add(time.Second), "z 1 1000\n", "job", "clash")
	// A rejected push to a new group creates it with its reason.
	neverReason := failPush(t, st, apiT0.Add(time.Second), "z 1 1000\n", "job", "never")

	for _, tc := range []struct {
		name, job, want string
		keys            []string
	}{
		{"a group whose last push failed has the reason", "failing", reason,
			[]string{"labels", "last_push_failure_reason", "last_push_successful", "push_failure_time_seconds", "push_time_seconds", "x"}},
		{"a group that never failed has no reason key, nor a family of its name", "fine", "",
			[]string{"labels", "last_push_successful", "push_failure_time_seconds", "push_time_seconds", "x"}},
		{"the reason wins over a family of its name", "clash", clashReason,
			[]string{"labels", "last_push_failure_reason", "last_push_successful", "push_failure_time_seconds", "push_time_seconds", "y"}},
		{"a group created by a rejected push has the reason", "never", neverReason,
			[]string{"labels", "last_push_failure_reason", "last_push_successful", "push_failure_time_seconds", "push_time_seconds"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := apiMetricsGroups(t, h)[tc.job]
			var keys []string
			for k := range g {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, tc.keys) {
				t.Errorf("keys %s, want %s", strings.Join(keys, ","), strings.Join(tc.keys, ","))
			}
			var got string
			if raw, ok := g[reasonKey]; ok {
				if err := json.Unmarshal(raw, &got); err != nil {
					t.Fatalf("%s is %s, not a string: %v", reasonKey, raw, err)
				}
			}
			if got != tc.want {
				t.Errorf("%s = %q, want %q", reasonKey, got, tc.want)
			}
		})
	}

	// The reason stays with the failure time after a successful push.
	apiPushText(t, st, apiT0.Add(2*time.Second), "x 2\n", "job", "failing")
	g := apiMetricsGroups(t, h)["failing"]
	if string(g["last_push_successful"]) != "true" {
		t.Fatalf("last_push_successful = %s after a successful push", g["last_push_successful"])
	}
	var got string
	if err := json.Unmarshal(g[reasonKey], &got); err != nil || got != reason {
		t.Errorf("%s after a successful push = %s, want %q", reasonKey, g[reasonKey], reason)
	}
}
