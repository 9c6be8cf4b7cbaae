package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	"golang.org/x/crypto/bcrypt"
)

// bcryptHash returns a bcrypt hash of secret at the lowest cost, so that the
// gateway's first check of each secret stays fast on a loaded machine.
func bcryptHash(t *testing.T, secret string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(secret), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

// basicAuthHeader returns an Authorization header value for basic auth.
func basicAuthHeader(user, pass string) string {
	r, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
	r.SetBasicAuth(user, pass)
	return r.Header.Get("Authorization")
}

// bearerDoer is a push.HTTPDoer that sends a bearer token with every request.
type bearerDoer struct {
	token string
}

// Do adds the Authorization header and sends req.
func (d bearerDoer) Do(req *http.Request) (*http.Response, error) {
	req.Header.Set("Authorization", "Bearer "+d.token)
	return httpClient.Do(req)
}

// permissionHashes are the bcrypt hashes of the test credentials' secrets,
// made once per test.
type permissionHashes map[string]string

func newPermissionHashes(t *testing.T) permissionHashes {
	h := permissionHashes{}
	for _, s := range []string{"backup-pw", "ci-token", "prom-pw", "ops-token", "ci-token-2"} {
		h[s] = bcryptHash(t, s)
	}
	return h
}

// permissionsFile renders the documentation's example file with the test
// secrets; ciToken names the ci credential's token (to rotate it).
func (h permissionHashes) file(ciToken string) string {
	return fmt.Sprintf(`read_requires_auth: true
credentials:
  - name: backup
    basic_auth:
      username: backup
      password_hash: %q
    push: ['{job=~"backup-.*"}', '{job="nightly",env="prod"}']
  - name: ci
    bearer_token_hash: %q
    push: ['{job=~"ci-.*"}']
  - name: prometheus
    basic_auth: {username: prometheus, password_hash: %q}
    read: true
  - name: ops
    bearer_token_hash: %q
    admin: true
`, h["backup-pw"], h[ciToken], h["prom-pw"], h["ops-token"])
}

// writePermissions replaces the file at path with content atomically
// (write, then rename), as an operator should, so that a reload never reads
// half a file.
func writePermissions(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// startPermissionGateway starts a gateway with the permission file at path
// (holding content), lifecycle and admin API on.
func startPermissionGateway(t *testing.T, content string) (*gateway, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "permissions.yml")
	writePermissions(t, path, content)
	g := startGateway(t, "--web.permissions-file="+path, "--web.enable-lifecycle", "--web.enable-admin-api")
	return g, path
}

// scrapeAs scrapes /metrics with an Authorization header.
func scrapeAs(t *testing.T, g *gateway, authorization string) families {
	t.Helper()
	r := mustStatus(t, http.StatusOK, http.MethodGet, g.url("/metrics"), nil, "Authorization", authorization)
	mfs, err := parseText(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// TestPermissionsAllowForbidAndAuthenticate pushes with each kind of
// credential: allowed pushes land; a push or delete outside the credential's
// selectors gets 403 with the reason and changes nothing; a missing or wrong
// credential gets 401 with a challenge; reads and admin endpoints need their
// own permission; health and readiness stay open.
func TestPermissionsAllowForbidAndAuthenticate(t *testing.T) {
	h := newPermissionHashes(t)
	g, _ := startPermissionGateway(t, h.file("ci-token"))
	prom := basicAuthHeader("prometheus", "prom-pw")

	// Allowed: the Go client with basic auth, and with a bearer token
	// through its Client.
	reg := prometheus.NewRegistry()
	newGauge(reg, "perm_backup_size_bytes", "Backup size.", 42)
	if err := push.New(g.URL, "backup-db").Grouping("instance", "h1").Gatherer(reg).BasicAuth("backup", "backup-pw").Push(); err != nil {
		t.Fatalf("backup push: %v", err)
	}
	reg = prometheus.NewRegistry()
	newGauge(reg, "perm_ci_duration_seconds", "CI duration.", 7)
	if err := push.New(g.URL, "ci-build").Gatherer(reg).Client(bearerDoer{"ci-token"}).Push(); err != nil {
		t.Fatalf("ci push: %v", err)
	}
	// The second selector of backup: job nightly with env prod.
	mustStatus(t, http.StatusOK, http.MethodPut, g.url("/metrics/job/nightly/env/prod"), []byte("perm_nightly 1\n"),
		"Authorization", basicAuthHeader("backup", "backup-pw"))
	// An admin may push anywhere.
	mustStatus(t, http.StatusOK, http.MethodPut, g.url("/metrics/job/ops-anything"), []byte("perm_ops 1\n"),
		"Authorization", "Bearer ops-token")

	before := scrapeAs(t, g, prom)
	before.requireValue(t, "perm_backup_size_bytes", lbl("job", "backup-db", "instance", "h1"), 42)
	before.requireValue(t, "perm_ci_duration_seconds", lbl("job", "ci-build", "instance", ""), 7)
	before.requireValue(t, "perm_nightly", lbl("job", "nightly", "env", "prod", "instance", ""), 1)
	dump := before.pushedDump()

	// Forbidden: a valid credential outside its selectors.
	for _, tc := range []struct {
		name, method, path, auth, want string
	}{
		{"backup pushes to a ci job", http.MethodPut, "/metrics/job/ci-build", basicAuthHeader("backup", "backup-pw"),
			`credential "backup" may not write to group {job="ci-build"}`},
		{"backup merges into nightly outside prod", http.MethodPost, "/metrics/job/nightly/env/dev", basicAuthHeader("backup", "backup-pw"),
			`credential "backup" may not write to group {env="dev",job="nightly"}`},
		{"ci deletes a backup group", http.MethodDelete, "/metrics/job/backup-db/instance/h1", "Bearer ci-token",
			`credential "ci" may not write to group {instance="h1",job="backup-db"}`},
		{"the read-only credential pushes", http.MethodPut, "/metrics/job/backup-db/instance/h1", prom,
			`credential "prometheus" may not write to group`},
		{"a base64 job name is judged decoded", http.MethodPut, "/metrics/job@base64/" + b64("ci-build"), basicAuthHeader("backup", "backup-pw"),
			`may not write to group {job="ci-build"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustStatus(t, http.StatusForbidden, tc.method, g.url(tc.path), []byte("perm_backup_size_bytes 666\n"), "Authorization", tc.auth)
			requireOneLine(t, r)
			if !strings.Contains(string(r.Body), tc.want) {
				t.Fatalf("403 body %q, want it to contain %q", r.Body, tc.want)
			}
		})
	}

	// Unauthenticated: no credential, a wrong password, an unknown user, a
	// wrong token.
	for _, tc := range []struct{ name, auth string }{
		{"no credential", ""},
		{"wrong password", basicAuthHeader("backup", "wrong")},
		{"unknown user", basicAuthHeader("nobody", "backup-pw")},
		{"wrong token", "Bearer nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.auth != "" {
				hdr = []string{"Authorization", tc.auth}
			}
			r := mustStatus(t, http.StatusUnauthorized, http.MethodPut, g.url("/metrics/job/backup-db/instance/h1"), []byte("perm_backup_size_bytes 666\n"), hdr...)
			requireOneLine(t, r)
			ch := strings.Join(r.Header.Values("WWW-Authenticate"), "; ")
			if !strings.Contains(ch, "Basic realm=") || !strings.Contains(ch, "Bearer realm=") {
				t.Fatalf("WWW-Authenticate %q, want Basic and Bearer challenges", ch)
			}
		})
	}
	// The Go client reports the 401.
	reg = prometheus.NewRegistry()
	newGauge(reg, "perm_backup_size_bytes", "Backup size.", 666)
	if err := push.New(g.URL, "backup-db").Grouping("instance", "h1").Gatherer(reg).BasicAuth("backup", "nope").Push(); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("push with a wrong password: err = %v, want a 401", err)
	}

	if got := scrapeAs(t, g, prom).pushedDump(); got != dump {
		t.Fatalf("rejected requests changed the store:\nbefore:\n%s\nafter:\n%s", dump, got)
	}

	// Reads: open health and readiness; /metrics, the API and the UI need
	// read.
	for _, p := range []string{"/-/healthy", "/-/ready"} {
		mustStatus(t, http.StatusOK, http.MethodGet, g.url(p), nil)
	}
	for _, p := range []string{"/metrics", "/api/v1/status", "/api/v1/metrics", "/"} {
		r := mustStatus(t, http.StatusUnauthorized, http.MethodGet, g.url(p), nil)
		if r.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("GET %s: 401 without WWW-Authenticate", p)
		}
		mustStatus(t, http.StatusForbidden, http.MethodGet, g.url(p), nil, "Authorization", basicAuthHeader("backup", "backup-pw"))
		mustStatus(t, http.StatusOK, http.MethodGet, g.url(p), nil, "Authorization", prom)
		mustStatus(t, http.StatusOK, http.MethodGet, g.url(p), nil, "Authorization", "Bearer ops-token")
	}

	// Admin endpoints need admin.
	r := mustStatus(t, http.StatusForbidden, http.MethodPut, g.url("/api/v1/admin/wipe"), nil, "Authorization", prom)
	if !strings.Contains(string(r.Body), `credential "prometheus" is not an admin`) {
		t.Fatalf("wipe by a reader: %s", r)
	}
	mustStatus(t, http.StatusUnauthorized, http.MethodPut, g.url("/-/quit"), nil)
	mustStatus(t, http.StatusForbidden, http.MethodPut, g.url("/-/reload"), nil, "Authorization", "Bearer ci-token")
	if got := scrapeAs(t, g, prom).pushedDump(); got != dump {
		t.Fatal("a forbidden wipe changed the store")
	}

	// Every rejection is counted by reason.
	own := scrapeAs(t, g, prom)
	for _, tc := range []struct {
		handler, reason string
		min             float64
	}{
		{"push", "forbidden", 4},
		{"delete", "forbidden", 1},
		{"push", "unauthenticated", 5},
		{"metrics", "unauthenticated", 1},
		{"wipe", "forbidden", 1},
	} {
		m := own.find("pushgate_rejected_requests_total", lbl("handler", tc.handler, "reason", tc.reason))
		if m == nil || sampleValue(m) < tc.min {
			t.Errorf("pushgate_rejected_requests_total{handler=%q,reason=%q} = %v, want >= %v", tc.handler, tc.reason, m, tc.min)
		}
	}

	// An admin may wipe.
	mustStatus(t, http.StatusAccepted, http.MethodPut, g.url("/api/v1/admin/wipe"), nil, "Authorization", "Bearer ops-token")
	if got := scrapeAs(t, g, prom).pushedNames(); len(got) != 0 {
		t.Fatalf("after an admin wipe: %v", got)
	}
}

// canPush reports the status of a small push with a bearer token.
func canPush(ctx context.Context, g *gateway, job, token string) (int, error) {
	r, err := doRequest(ctx, http.MethodPut, g.url("/metrics/job/"+job), []byte("perm_reload 1\n"), "Authorization", "Bearer "+token)
	return r.Status, err
}

// TestPermissionsReload rotates the ci token through SIGHUP and /-/reload,
// and checks that a bad file, by either route, keeps the previous policy,
// says why, and shows in the reload gauge.
func TestPermissionsReload(t *testing.T) {
	h := newPermissionHashes(t)
	g, path := startPermissionGateway(t, h.file("ci-token"))
	prom := basicAuthHeader("prometheus", "prom-pw")
	ops := []string{"Authorization", "Bearer ops-token"}

	requirePush := func(token string, want int) {
		t.Helper()
		if code, err := canPush(bgCtx, g, "ci-build", token); err != nil || code != want {
			t.Fatalf("push with token %q: %d, %v; want %d", token, code, err, want)
		}
	}
	reloadGauge := func() float64 {
		t.Helper()
		m := scrapeAs(t, g, prom).require(t, "pushgate_permissions_reload_success", lbl())
		return sampleValue(m)
	}
	requirePush("ci-token", http.StatusOK)
	requirePush("ci-token-2", http.StatusUnauthorized)
	if v := reloadGauge(); v != 1 {
		t.Fatalf("reload_success = %v at start, want 1", v)
	}

	// SIGHUP with a good file: the new token works, the old one not.
	writePermissions(t, path, h.file("ci-token-2"))
	if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitTimeout, func() error {
		if code, err := canPush(bgCtx, g, "ci-build", "ci-token-2"); err != nil || code != http.StatusOK {
			return errorf("push with the rotated token after SIGHUP: %d, %v", code, err)
		}
		return nil
	})
	requirePush("ci-token", http.StatusUnauthorized)

	// SIGHUP with a bad file: the old policy stays, the log says why.
	writePermissions(t, path, strings.Replace(h.file("ci-token"), "push: ['{job=~\"ci-.*\"}']", "push: ['{job=~\"ci-(\"}']", 1))
	if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitTimeout, func() error {
		if !strings.Contains(g.log(), "permission file reload failed") {
			return errorf("no reload failure in the log")
		}
		return nil
	})
	if !strings.Contains(g.log(), `credential \"ci\": push[0]`) && !strings.Contains(g.log(), `credential "ci": push[0]`) {
		t.Fatalf("the log does not name the bad credential and field:\n%s", g.logTail(4096))
	}
	if g.exited() {
		t.Fatal("the gateway exited on SIGHUP")
	}
	requirePush("ci-token-2", http.StatusOK)
	requirePush("ci-token", http.StatusUnauthorized)
	if v := reloadGauge(); v != 0 {
		t.Fatalf("reload_success = %v after a failed reload, want 0", v)
	}

	// /-/reload with the same bad file: 500 with the reason.
	r := mustStatus(t, http.StatusInternalServerError, http.MethodPost, g.url("/-/reload"), nil, ops...)
	requireOneLine(t, r)
	if !strings.Contains(string(r.Body), `credential "ci": push[0]`) || !strings.Contains(string(r.Body), "previous permissions stay in force") {
		t.Fatalf("reload of a bad file: %s", r)
	}
	requirePush("ci-token-2", http.StatusOK)

	// /-/reload with a good file.
	writePermissions(t, path, h.file("ci-token"))
	mustStatus(t, http.StatusOK, http.MethodPut, g.url("/-/reload"), nil, ops...)
	requirePush("ci-token", http.StatusOK)
	requirePush("ci-token-2", http.StatusUnauthorized)
	if v := reloadGauge(); v != 1 {
		t.Fatalf("reload_success = %v after a good reload, want 1", v)
	}
	mustStatus(t, http.StatusMethodNotAllowed, http.MethodGet, g.url("/-/reload"), nil, ops...)
}

// TestReloadNeedsLifecycle checks that /-/reload is 404 without
// --web.enable-lifecycle, as the reference has no such endpoint, and that
// with it but without a permission file it answers 200.
func TestReloadNeedsLifecycle(t *testing.T) {
	g := startGateway(t)
	mustStatus(t, http.StatusNotFound, http.MethodPost, g.url("/-/reload"), nil)
	g = startGateway(t, "--web.enable-lifecycle")
	mustStatus(t, http.StatusOK, http.MethodPost, g.url("/-/reload"), nil)
}

// TestPushesDuringReloadAllSucceed keeps pushing with a credential that every
// version of the file allows while the file is reloaded over and over by
// both routes; not one push may fail.
func TestPushesDuringReloadAllSucceed(t *testing.T) {
	h := newPermissionHashes(t)
	g, path := startPermissionGateway(t, h.file("ci-token"))
	const (
		workers      = 4
		maxPerWorker = 5000 // bounds the loop if reloads are slow
		reloads      = 40
	)
	ctx, cancel := context.WithTimeout(bgCtx, 3*time.Minute)
	defer cancel()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	last := make([]int, workers) // the last value each worker pushed
	for w := range workers {
		wg.Go(func() {
			last[w] = -1
			for i := range maxPerWorker {
				select {
				case <-stop:
					return
				default:
				}
				r, err := doRequest(ctx, http.MethodPut, g.url(fmt.Sprintf("/metrics/job/backup-w%d", w)),
					[]byte(fmt.Sprintf("perm_during_reload %d\n", i)), "Authorization", basicAuthHeader("backup", "backup-pw"))
				if err == nil && r.Status != http.StatusOK {
					err = fmt.Errorf("push %d of worker %d: %s", i, w, r)
				}
				if err != nil {
					errs <- err
					return
				}
				last[w] = i
			}
		})
	}

	for n := range reloads {
		// Alternate the ci token, so that each reload really swaps in a
		// different policy, and the route.
		token := "ci-token"
		if n%2 == 1 {
			token = "ci-token-2"
		}
		writePermissions(t, path, h.file(token))
		if n%3 == 0 {
			if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			continue
		}
		r, err := doRequest(ctx, http.MethodPost, g.url("/-/reload"), nil, "Authorization", "Bearer ops-token")
		if err != nil || r.Status != http.StatusOK {
			t.Errorf("reload %d: %v, %v", n, r, err)
			break
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	total := 0
	for _, l := range last {
		total += l + 1
	}
	t.Logf("%d pushes during %d reloads", total, reloads)
	mfs := scrapeAs(t, g, basicAuthHeader("prometheus", "prom-pw"))
	for w := range workers {
		if last[w] < 0 {
			t.Fatalf("worker %d pushed nothing during the reloads", w)
		}
		mfs.requireValue(t, "perm_during_reload", lbl("job", fmt.Sprintf("backup-w%d", w), "instance", ""), float64(last[w]))
	}
	if got := strings.Count(g.log(), "permission file reload failed"); got != 0 {
		t.Fatalf("%d reloads failed", got)
	}
}
