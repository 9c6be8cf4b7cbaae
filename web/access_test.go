package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/pushgate/pushgate/access"
)

// accessTestHandler returns a handler with a permission file: user "pusher"
// may push to job a, token "reader" may read, token "admin" is an admin.
func accessTestHandler(t *testing.T, opts ...func(*Options)) *Handler {
	t.Helper()
	hash := func(s string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(s), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		return string(h)
	}
	path := filepath.Join(t.TempDir(), "permissions.yml")
	content := fmt.Sprintf(`read_requires_auth: true
credentials:
  - {name: pusher, basic_auth: {username: pusher, password_hash: %q}, push: ['{job="a"}']}
  - {name: reader, bearer_token_hash: %q, read: true}
  - {name: admin, bearer_token_hash: %q, admin: true}
`, hash("pw"), hash("reader"), hash("admin"))
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	pf, err := access.LoadPolicyFile(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := apiTestHandler(t, append([]func(*Options){func(o *Options) { o.Permissions = pf }}, opts...)...)
	return h
}

func TestAccessControlByRoute(t *testing.T) {
	h := accessTestHandler(t, func(o *Options) { o.EnableAdminAPI = true })
	pusher := "basic"
	for _, tc := range []struct {
		name, method, path, auth string
		want                     int
	}{
		{"push allowed", http.MethodPut, "/metrics/job/a", pusher, http.StatusOK},
		{"merge allowed with more labels", http.MethodPost, "/metrics/job/a/instance/x", pusher, http.StatusOK},
		{"delete allowed", http.MethodDelete, "/metrics/job/a", pusher, http.StatusAccepted},
		{"push to another job", http.MethodPut, "/metrics/job/b", pusher, http.StatusForbidden},
		{"push without a credential", http.MethodPut, "/metrics/job/a", "", http.StatusUnauthorized},
		{"push with a wrong token", http.MethodPut, "/metrics/job/a", "Bearer nope", http.StatusUnauthorized},
		{"a bad path is still a 400 for a valid credential", http.MethodPut, "/metrics/job/a/odd", pusher, http.StatusBadRequest},
		{"a reader may not push", http.MethodPut, "/metrics/job/a", "Bearer reader", http.StatusForbidden},
		{"an admin may push anywhere", http.MethodPut, "/metrics/job/z", "Bearer admin", http.StatusOK},
		{"scrape without a credential", http.MethodGet, "/metrics", "", http.StatusUnauthorized},
		{"scrape by a pusher", http.MethodGet, "/metrics", pusher, http.StatusForbidden},
		{"scrape by a reader", http.MethodGet, "/metrics", "Bearer reader", http.StatusOK},
		{"status API by a reader", http.MethodGet, "/api/v1/status", "Bearer reader", http.StatusOK},
		{"UI without a credential", http.MethodGet, "/", "", http.StatusUnauthorized},
		{"healthy is open", http.MethodGet, "/-/healthy", "", http.StatusOK},
		{"ready is open", http.MethodGet, "/-/ready", "", http.StatusOK},
		{"API preflight is open", http.MethodOptions, "/api/v1/metrics", "", http.StatusOK},
		{"wipe by a reader", http.MethodPut, "/api/v1/admin/wipe", "Bearer reader", http.StatusForbidden},
		{"wipe by an admin", http.MethodPut, "/api/v1/admin/wipe", "Bearer admin", http.StatusAccepted},
		{"reload is absent without lifecycle", http.MethodPost, "/-/reload", "Bearer admin", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader("x 1\n"))
			switch tc.auth {
			case "":
			case pusher:
				req.SetBasicAuth("pusher", "pw")
			default:
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("%s %s: %d %q, want %d", tc.method, tc.path, rec.Code, rec.Body, tc.want)
			}
			if rec.Code == http.StatusUnauthorized && len(rec.Header().Values("WWW-Authenticate")) != 2 {
				t.Fatalf("401 challenges %q, want Basic and Bearer", rec.Header().Values("WWW-Authenticate"))
			}
		})
	}
}

func TestReloadEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name        string
		permissions bool
		auth        string
		want        int
	}{
		{"no permission file: nothing to reload", false, "", http.StatusOK},
		{"an admin reloads", true, "Bearer admin", http.StatusOK},
		{"a reader may not reload", true, "Bearer reader", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lifecycle := func(o *Options) { o.EnableLifecycle = true }
			var h *Handler
			if tc.permissions {
				h = accessTestHandler(t, lifecycle)
			} else {
				h, _ = apiTestHandler(t, lifecycle)
			}
			req := httptest.NewRequest(http.MethodPost, "/-/reload", nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("POST /-/reload: %d %q, want %d", rec.Code, rec.Body, tc.want)
			}
		})
	}
}
