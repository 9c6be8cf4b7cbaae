package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/store"
)

// adminFixture is a store with groups pushed at known ages: fresh (1 min),
// old (3 h), ancient (3 days), and never, a group whose only push failed.
func adminFixture(t *testing.T, enable bool) (*Handler, *store.Store) {
	t.Helper()
	h, st := apiTestHandler(t, func(o *Options) { o.EnableAdminAPI = enable })
	now := time.Now()
	apiPushText(t, st, now.Add(-time.Minute), "a 1\n", "job", "backup-fresh")
	apiPushText(t, st, now.Add(-3*time.Hour), "a 1\n", "job", "backup-old", "instance", "x")
	apiPushText(t, st, now.Add(-72*time.Hour), "b 1\nc 2\n", "job", "ancient")
	// A push with a timestamp is rejected and creates the group with push
	// time 0 and a failure time.
	if _, err := st.Push(t.Context(), store.Push{
		Key: groupkey.New(map[string]string{"job": "never"}), Method: store.Replace,
		Families: mustDecodeText(t, "d 1 1000\n"), Time: now,
	}); err == nil {
		t.Fatal("push with a timestamp accepted")
	}
	if g := st.Group(groupkey.New(map[string]string{"job": "never"})); g == nil || !g.PushTime().IsZero() {
		t.Fatalf("fixture: the failed-only group is %v", g)
	}
	return h, st
}

// adminResponse is the decoded body of an admin groups response.
type adminResponse struct {
	Status    string          `json:"status"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Data      adminGroupsData `json:"data"`
}

// jobs lists the job labels of the groups in the response.
func (r adminResponse) jobs() string {
	var out []string
	for _, g := range r.Data.Groups {
		out = append(out, g.Labels["job"])
	}
	return strings.Join(out, ",")
}

func adminCall(t *testing.T, h *Handler, method, query string) (int, adminResponse) {
	t.Helper()
	rec := apiDo(h, method, "/api/v1/admin/groups?"+query)
	var r adminResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
		t.Fatalf("%s %s: body is not JSON: %v\n%s", method, query, err, rec.Body)
	}
	return rec.Code, r
}

func TestAdminRoutesAre404WithoutTheFlag(t *testing.T) {
	h, _ := adminFixture(t, false)
	for _, tc := range []struct{ method, path string }{
		{http.MethodPut, "/api/v1/admin/wipe"},
		{http.MethodGet, "/api/v1/admin/groups"},
		{http.MethodDelete, "/api/v1/admin/groups?older_than=1s"},
	} {
		if rec := apiDo(h, tc.method, tc.path); rec.Code != http.StatusNotFound {
			t.Errorf("%s %s = %d, want 404", tc.method, tc.path, rec.Code)
		}
	}
}

func TestAdminListGroups(t *testing.T) {
	h, _ := adminFixture(t, true)
	for _, tc := range []struct {
		name, query, want string
	}{
		{"everything", "", "ancient,backup-fresh,backup-old,never"},
		{"by regexp", url.Values{"match[]": {`job=~"backup-.*"`}}.Encode(), "backup-fresh,backup-old"},
		{"by label presence", url.Values{"match[]": {`instance!=""`}}.Encode(), "backup-old"},
		{"the matchers of one match[] are ANDed", url.Values{"match[]": {`job=~"backup-.*",instance=""`}}.Encode(), "backup-fresh"},
		{"several match[] are ORed, as in Prometheus", url.Values{"match[]": {`job="ancient"`, `instance!=""`}}.Encode(), "ancient,backup-old"},
		{"a group matching two match[] is listed once", url.Values{"match[]": {`job=~"backup-.*"`, `instance!=""`}}.Encode(), "backup-fresh,backup-old"},
		{"older than an hour, never-pushed included", "older_than=1h", "ancient,backup-old,never"},
		{"older than two days", "older_than=2d", "ancient,never"},
		{"matchers and age", url.Values{"match[]": {`job=~"backup.*"`}, "older_than": {"90m"}}.Encode(), "backup-old"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, r := adminCall(t, h, http.MethodGet, tc.query)
			if code != http.StatusOK || r.Status != "success" {
				t.Fatalf("status %d %+v", code, r)
			}
			if got := r.jobs(); got != tc.want {
				t.Fatalf("groups %s, want %s", got, tc.want)
			}
		})
	}

	_, r := adminCall(t, h, http.MethodGet, url.Values{"match[]": {`job="ancient"`}}.Encode())
	g := r.Data.Groups[0]
	if g.LastPushTime == nil || g.AgeSeconds == nil || *g.AgeSeconds < 72*3600 || *g.AgeSeconds > 72*3600+60 || g.Series != 4 || !g.LastPushSuccessful {
		t.Errorf("ancient group described as %+v", g)
	}
	_, r = adminCall(t, h, http.MethodGet, url.Values{"match[]": {`job="never"`}}.Encode())
	if g := r.Data.Groups[0]; g.LastPushTime != nil || g.AgeSeconds != nil || g.LastPushSuccessful {
		t.Errorf("never-pushed group described as %+v", g)
	}
}

func TestAdminDeleteNamingTwoJobsDeletesBoth(t *testing.T) {
	h, st := adminFixture(t, true)
	code, r := adminCall(t, h, http.MethodDelete, url.Values{"match[]": {`job="ancient"`, `job="never"`}}.Encode())
	if code != http.StatusOK || r.Data.Deleted != 2 || r.jobs() != "ancient,never" {
		t.Fatalf("delete: %d %+v", code, r)
	}
	var left []string
	for _, g := range st.Groups() {
		left = append(left, g.Key().Job())
	}
	sort.Strings(left)
	if strings.Join(left, ",") != "backup-fresh,backup-old" {
		t.Fatalf("left %v, want backup-fresh,backup-old", left)
	}
}

func TestAdminDryRunDeletesNothing(t *testing.T) {
	h, st := adminFixture(t, true)
	code, r := adminCall(t, h, http.MethodDelete, "older_than=1h&dry_run=true")
	if code != http.StatusOK || !r.Data.DryRun || r.Data.Deleted != 0 || r.jobs() != "ancient,backup-old,never" {
		t.Fatalf("dry run: %d %+v", code, r)
	}
	if n := len(st.Groups()); n != 4 {
		t.Fatalf("%d groups after a dry run, want 4", n)
	}
}

func TestAdminDeleteRemovesExactlyTheMatchingGroups(t *testing.T) {
	h, st := adminFixture(t, true)
	code, r := adminCall(t, h, http.MethodDelete, url.Values{"match[]": {`{job=~"backup-.*|ancient"}`}, "older_than": {"1h"}}.Encode())
	if code != http.StatusOK || r.Data.DryRun || r.Data.Deleted != 2 || r.jobs() != "ancient,backup-old" {
		t.Fatalf("delete: %d %+v", code, r)
	}
	var left []string
	for _, g := range st.Groups() {
		left = append(left, g.Key().Job())
	}
	if strings.Join(left, ",") != "backup-fresh,never" {
		t.Fatalf("left %v, want backup-fresh,never", left)
	}
	// Deleting again finds nothing and says so.
	if code, r := adminCall(t, h, http.MethodDelete, "older_than=1h&match[]="+url.QueryEscape(`job="backup-old"`)); code != http.StatusOK || r.Data.Deleted != 0 || len(r.Data.Groups) != 0 {
		t.Fatalf("second delete: %d %+v", code, r)
	}
}

func TestAdminRejectsBadRequestsWithAOneLineReason(t *testing.T) {
	h, st := adminFixture(t, true)
	for _, tc := range []struct {
		name, method, query, want string
	}{
		{"delete without any selection", http.MethodDelete, "", "use /api/v1/admin/wipe"},
		{"delete with only dry_run", http.MethodDelete, "dry_run=true", "use /api/v1/admin/wipe"},
		{"bad matcher", http.MethodDelete, "match[]=" + url.QueryEscape(`job=a`), `invalid matcher "job=a"`},
		{"bad regexp", http.MethodGet, "match[]=" + url.QueryEscape(`job=~"(("`), "bad regular expression"},
		{"bad duration", http.MethodDelete, "older_than=soon", `invalid older_than "soon"`},
		{"zero duration", http.MethodDelete, "older_than=0s", "must be positive"},
		{"bad dry_run", http.MethodDelete, "older_than=1h&dry_run=maybe", `invalid dry_run "maybe"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, r := adminCall(t, h, tc.method, tc.query)
			if code != http.StatusBadRequest || r.Status != "error" || r.ErrorType != "bad_data" || !strings.Contains(r.Error, tc.want) || strings.Contains(r.Error, "\n") {
				t.Fatalf("got %d %+v, want 400 with %q", code, r, tc.want)
			}
		})
	}
	if n := len(st.Groups()); n != 4 {
		t.Fatalf("%d groups after rejected requests, want 4", n)
	}
}

func TestAdminWipeDeletesEveryGroupAndAnswers202(t *testing.T) {
	h, st := adminFixture(t, true)
	rec := apiDo(h, http.MethodPut, "/api/v1/admin/wipe")
	if rec.Code != http.StatusAccepted || rec.Body.Len() != 0 {
		t.Fatalf("wipe: %d %q, want 202 and no body", rec.Code, rec.Body)
	}
	if n := len(st.Groups()); n != 0 {
		t.Fatalf("%d groups after wipe", n)
	}
	if rec := apiDo(h, http.MethodGet, "/api/v1/admin/wipe"); rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("GET wipe = %d, want 405", rec.Code)
	}
}
