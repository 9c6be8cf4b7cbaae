package web

import (
	"bytes"
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

// referenceFamily is a family object of /api/v1/metrics as a typed client
// of the reference Pushgateway reads it (REFERENCE §4.2): every field but
// help is required, and fields it does not know are ignored.
type referenceFamily struct {
	TimeStamp *time.Time        `json:"time_stamp"`
	Type      *string           `json:"type"`
	Help      string            `json:"help"`
	Metrics   []json.RawMessage `json:"metrics"`
}

// referenceGroup is a group object read the same way: labels,
// last_push_successful, and every other key a family object.
type referenceGroup struct {
	Labels             map[string]string
	LastPushSuccessful bool
	Families           map[string]referenceFamily
}

// UnmarshalJSON decodes a group object as a typed client of the reference
// does, and fails on any key other than labels and last_push_successful
// that is not a family object.
func (g *referenceGroup) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	g.Families = map[string]referenceFamily{}
	for k, v := range raw {
		switch k {
		case "labels":
			if err := json.Unmarshal(v, &g.Labels); err != nil {
				return &json.UnmarshalTypeError{Value: string(v), Field: k}
			}
		case "last_push_successful":
			if err := json.Unmarshal(v, &g.LastPushSuccessful); err != nil {
				return &json.UnmarshalTypeError{Value: string(v), Field: k}
			}
		default:
			var f referenceFamily
			if !bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) || json.Unmarshal(v, &f) != nil ||
				f.TimeStamp == nil || f.Type == nil || f.Metrics == nil {
				return &familyError{key: k, value: string(v)}
			}
			switch *f.Type {
			case "GAUGE", "COUNTER", "UNTYPED", "SUMMARY", "HISTOGRAM", "GAUGE_HISTOGRAM":
			default:
				return &familyError{key: k, value: string(v)}
			}
			g.Families[k] = f
		}
	}
	return nil
}

// familyError is what a typed client of the reference reports for a group
// key that is not a family object.
type familyError struct{ key, value string }

func (e *familyError) Error() string {
	return e.key + " is not a metric family object: " + e.value
}

// referenceGroups decodes /api/v1/metrics as a typed client of the
// reference does, by job.
func referenceGroups(t *testing.T, h http.Handler) map[string]referenceGroup {
	t.Helper()
	rec := apiDo(h, http.MethodGet, "/api/v1/metrics")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /api/v1/metrics = %d: %s", rec.Code, rec.Body)
	}
	var body struct {
		Status string           `json:"status"`
		Data   []referenceGroup `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("a typed client of the reference cannot read /api/v1/metrics: %v\n%s", err, rec.Body)
	}
	out := map[string]referenceGroup{}
	for _, g := range body.Data {
		out[g.Labels["job"]] = g
	}
	return out
}

// failureReason returns the reason field of the group's
// push_failure_time_seconds family object, "" when absent.
func failureReason(t *testing.T, g map[string]json.RawMessage) string {
	t.Helper()
	var f struct {
		Reason *string `json:"reason"`
	}
	if err := json.Unmarshal(g["push_failure_time_seconds"], &f); err != nil {
		t.Fatalf("push_failure_time_seconds: %v", err)
	}
	if f.Reason == nil {
		return ""
	}
	if *f.Reason == "" {
		t.Fatalf(`push_failure_time_seconds has "reason":"" instead of leaving it out`)
	}
	return *f.Reason
}

// sameReason reports whether a kept failure reason is the one a 400
// answered with: the answer's text, without the fixed prefix the push
// handler puts before the store's reason. Both are "" for no failure.
func sameReason(kept, answered string) bool {
	if kept == "" || answered == "" {
		return kept == answered
	}
	return strings.HasSuffix(answered, kept) && len(kept) > len(answered)/3
}

// httpPush pushes body by PUT to the path below /metrics/ and returns the
// status and the answer's reason (its body without the final newline).
func httpPush(t *testing.T, h http.Handler, path, body string) (int, string) {
	t.Helper()
	w := do(t, h, http.MethodPut, "/metrics/"+path, []byte(body), nil)
	return w.Code, strings.TrimSuffix(w.Body.String(), "\n")
}

func TestAPIMetricsReadsAsTheReferenceWithTheFailureReasonInItsFamily(t *testing.T) {
	h, _ := apiTestHandler(t, func(o *Options) { o.EnableAdminAPI = true })
	mustPush := func(path, body string) {
		t.Helper()
		if code, reason := httpPush(t, h, path, body); code != http.StatusOK {
			t.Fatalf("push %q to %s: %d %s", body, path, code, reason)
		}
	}
	mustFail := func(path, body string) string {
		t.Helper()
		code, reason := httpPush(t, h, path, body)
		if code != http.StatusBadRequest {
			t.Fatalf("push %q to %s: %d %s, want 400", body, path, code, reason)
		}
		return reason
	}
	mustPush("job/fine", "x 1\n")
	mustPush("job/failing", "x 1\n")
	// A sample timestamp is refused by the store's checks, which record
	// the failure time and the reason; a consistency failure too.
	failingReason := mustFail("job/failing", "x 1 1000\n")
	mustPush("job/recovered", "x 1\n")
	recoveredReason := mustFail("job/recovered", "x{a=\"1\"} 1\nx{a=\"1\"} 2\n")
	mustPush("job/recovered", "x 2\n")
	// A rejected push to a new group creates it with only a failure time.
	neverReason := mustFail("job/never", "z 1 1000\n")
	// A family of the name pushgate once used for the reason is a family
	// like any other.
	mustPush("job/clash", "last_push_failure_reason 1\ny 1\n")
	clashReason := mustFail("job/clash", "z 1 1000\n")

	ref := referenceGroups(t, h)
	raw := apiMetricsGroups(t, h)
	for _, tc := range []struct {
		name, job, reason string
		successful        bool
		families          []string
	}{
		{"a group that never failed has no reason", "fine", "", true,
			[]string{"push_failure_time_seconds", "push_time_seconds", "x"}},
		{"a group whose last push failed has the reason in its failure time family", "failing", failingReason, false,
			[]string{"push_failure_time_seconds", "push_time_seconds", "x"}},
		{"the reason stays with the failure time after a successful push", "recovered", recoveredReason, true,
			[]string{"push_failure_time_seconds", "push_time_seconds", "x"}},
		{"a group created by a rejected push has the reason", "never", neverReason, false,
			[]string{"push_failure_time_seconds", "push_time_seconds"}},
		{"a family named last_push_failure_reason is shown as a family", "clash", clashReason, false,
			[]string{"last_push_failure_reason", "push_failure_time_seconds", "push_time_seconds", "y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, ok := ref[tc.job]
			if !ok {
				t.Fatalf("no group with job %q in %v", tc.job, ref)
			}
			var names []string
			for name := range g.Families {
				names = append(names, name)
			}
			slices.Sort(names)
			if !slices.Equal(names, tc.families) {
				t.Errorf("families %s, want %s", strings.Join(names, ","), strings.Join(tc.families, ","))
			}
			if g.LastPushSuccessful != tc.successful {
				t.Errorf("last_push_successful = %v, want %v", g.LastPushSuccessful, tc.successful)
			}
			if tc.reason == "" && tc.job != "fine" {
				t.Fatal("the failed push gave no reason")
			}
			if got := failureReason(t, raw[tc.job]); !sameReason(got, tc.reason) {
				t.Errorf("push_failure_time_seconds reason = %q, want the 400's %q", got, tc.reason)
			}
			for name, raw := range raw[tc.job] {
				if name != "push_failure_time_seconds" && strings.Contains(string(raw), `"reason"`) {
					t.Errorf("%s carries a reason: %s", name, raw)
				}
			}
		})
	}

	// pushgate's own admin groups API has it as a field of the group.
	rec := apiDo(h, http.MethodGet, "/api/v1/admin/groups")
	var admin struct {
		Data struct {
			Groups []map[string]json.RawMessage `json:"groups"`
		} `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &admin); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("GET /api/v1/admin/groups = %d %v: %s", rec.Code, err, rec.Body)
	}
	want := map[string]string{"fine": "", "failing": failingReason, "recovered": recoveredReason, "never": neverReason, "clash": clashReason}
	for _, g := range admin.Data.Groups {
		var labels map[string]string
		if err := json.Unmarshal(g["labels"], &labels); err != nil {
			t.Fatalf("admin group labels %s: %v", g["labels"], err)
		}
		job := labels["job"]
		var got string
		if v, ok := g["last_push_failure_reason"]; ok {
			if err := json.Unmarshal(v, &got); err != nil || got == "" {
				t.Errorf("admin group %s: last_push_failure_reason is %s, want a non-empty string", job, v)
			}
		}
		if !sameReason(got, want[job]) {
			t.Errorf("admin group %s: last_push_failure_reason = %q, want the 400's %q", job, got, want[job])
		}
		delete(want, job)
	}
	if len(want) > 0 {
		t.Errorf("admin groups lack %v", want)
	}
}
