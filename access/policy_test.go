package access

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// hashOf returns a bcrypt hash of secret at the lowest cost, to keep tests fast.
func hashOf(t testing.TB, secret string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(secret), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

// examplePolicy is the file of the documentation's example, with real hashes.
func exampleFile(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf(`
read_requires_auth: true
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
`, hashOf(t, "backup-pw"), hashOf(t, "ci-token"), hashOf(t, "prom-pw"), hashOf(t, "ops-token"))
}

func mustParse(t *testing.T, data string) *Policy {
	t.Helper()
	p, err := parse([]byte(data), newVerifiedCache(defaultCacheEntries))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return p
}

// request builds a request with an Authorization header ("" for none).
func request(authorization string) *http.Request {
	r, _ := http.NewRequest(http.MethodPut, "http://127.0.0.1/metrics/job/x", nil)
	if authorization != "" {
		r.Header.Set("Authorization", authorization)
	}
	return r
}

func basic(user, pass string) string {
	r := request("")
	r.SetBasicAuth(user, pass)
	return r.Header.Get("Authorization")
}

func TestParseRejectsBadFiles(t *testing.T) {
	good := hashOf(t, "x")
	for _, tc := range []struct {
		name, file, want string
	}{
		{"unknown field", "credentials:\n  - name: a\n    bearer_token_hash: '" + good + "'\n    pushes: ['{job=\"a\"}']\n", "field pushes not found"},
		{"unknown top-level field", "read_requires_authentication: true\n", "not found"},
		{"no credentials", "read_requires_auth: true\n", "no credentials"},
		{"empty file", "", "no credentials"},
		{"missing name", "credentials:\n  - bearer_token_hash: '" + good + "'\n", "credentials[0]: name is required"},
		{"duplicate name", "credentials:\n  - {name: a, bearer_token_hash: '" + good + "'}\n  - {name: a, bearer_token_hash: '" + good + "'}\n", `credential "a": name: used by another`},
		{"duplicate user name", "credentials:\n  - {name: a, basic_auth: {username: u, password_hash: '" + good + "'}}\n  - {name: b, basic_auth: {username: u, password_hash: '" + good + "'}}\n", `credential "b": basic_auth.username: "u" is already used by credential "a"`},
		{"both kinds", "credentials:\n  - {name: a, bearer_token_hash: '" + good + "', basic_auth: {username: u, password_hash: '" + good + "'}}\n", `credential "a": basic_auth and bearer_token_hash: give exactly one`},
		{"neither kind", "credentials:\n  - {name: a, read: true}\n", `credential "a": basic_auth or bearer_token_hash: one is required`},
		{"empty user name", "credentials:\n  - {name: a, basic_auth: {password_hash: '" + good + "'}}\n", `credential "a": basic_auth.username: required`},
		{"missing password hash", "credentials:\n  - {name: a, basic_auth: {username: u}}\n", `credential "a": basic_auth.password_hash: required`},
		{"plain-text password", "credentials:\n  - {name: a, basic_auth: {username: u, password_hash: secret}}\n", `credential "a": basic_auth.password_hash: not a bcrypt hash`},
		{"bad token hash", "credentials:\n  - {name: a, bearer_token_hash: '$2y$10$short'}\n", `credential "a": bearer_token_hash: not a bcrypt hash`},
		{"bad selector", "credentials:\n  - {name: a, bearer_token_hash: '" + good + "', push: ['{job=~\"(\"}']}\n", `credential "a": push[0]: invalid matcher`},
		{"empty selector", "credentials:\n  - {name: a, bearer_token_hash: '" + good + "', push: ['{}']}\n", `credential "a": push[0]: invalid matcher "{}": no matcher`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse([]byte(tc.file), newVerifiedCache(defaultCacheEntries))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parse error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestSelectorsDecideWhoMayPushWhere(t *testing.T) {
	p := mustParse(t, exampleFile(t))
	creds := map[string]*Credential{}
	for _, h := range []string{basic("backup", "backup-pw"), basic("prometheus", "prom-pw"), "Bearer ci-token", "Bearer ops-token"} {
		c, err := p.Authenticate(request(h))
		if err != nil {
			t.Fatalf("Authenticate(%q): %v", h, err)
		}
		creds[c.Name()] = c
	}
	for _, tc := range []struct {
		cred   string
		labels map[string]string
		want   bool
	}{
		{"backup", map[string]string{"job": "backup-db"}, true},
		{"backup", map[string]string{"job": "backup-db", "instance": "h1"}, true},
		{"backup", map[string]string{"job": "nightly", "env": "prod"}, true},
		{"backup", map[string]string{"job": "nightly", "env": "dev"}, false},
		{"backup", map[string]string{"job": "nightly"}, false}, // env absent matches as ""
		{"backup", map[string]string{"job": "xbackup-db"}, false},
		{"backup", map[string]string{"job": "ci-build"}, false},
		{"ci", map[string]string{"job": "ci-build"}, true},
		{"ci", map[string]string{"job": "backup-db"}, false},
		{"prometheus", map[string]string{"job": "backup-db"}, false},
		{"ops", map[string]string{"job": "anything", "x": "y"}, true},
	} {
		t.Run(fmt.Sprintf("%s pushes to %v", tc.cred, tc.labels), func(t *testing.T) {
			if got := creds[tc.cred].MayPush(tc.labels); got != tc.want {
				t.Fatalf("MayPush = %v, want %v", got, tc.want)
			}
		})
	}
	for name, want := range map[string][2]bool{ // read, admin
		"backup": {false, false}, "ci": {false, false}, "prometheus": {true, false}, "ops": {true, true},
	} {
		if got := [2]bool{creds[name].MayRead(), creds[name].IsAdmin()}; got != want {
			t.Errorf("%s: read, admin = %v, want %v", name, got, want)
		}
	}
	if !p.ReadRequiresAuth() {
		t.Error("ReadRequiresAuth = false, want true")
	}
	if got := strings.Join(p.Challenges(), "; "); !strings.Contains(got, "Basic realm=") || !strings.Contains(got, "Bearer realm=") {
		t.Errorf("Challenges = %q, want Basic and Bearer", got)
	}
}

func TestAuthenticate(t *testing.T) {
	p := mustParse(t, exampleFile(t))
	for _, tc := range []struct {
		name, header string
		want         string // credential name, or "ERR " and the error
	}{
		{"basic auth", basic("backup", "backup-pw"), "backup"},
		{"bearer token", "Bearer ci-token", "ci"},
		{"bearer scheme in lower case", "bearer ops-token", "ops"},
		{"no header", "", "ERR " + ErrNoCredential.Error()},
		{"wrong password", basic("backup", "nope"), "ERR " + ErrBadCredential.Error()},
		{"another user's password", basic("backup", "prom-pw"), "ERR " + ErrBadCredential.Error()},
		{"unknown user", basic("nobody", "backup-pw"), "ERR " + ErrBadCredential.Error()},
		{"wrong token", "Bearer nope", "ERR " + ErrBadCredential.Error()},
		{"a password as token", "Bearer backup-pw", "ERR " + ErrBadCredential.Error()},
		{"empty token", "Bearer ", "ERR " + ErrBadCredential.Error()},
		{"other scheme", "Digest x", "ERR " + ErrBadCredential.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := p.Authenticate(request(tc.header))
			if want, ok := strings.CutPrefix(tc.want, "ERR "); ok {
				if err == nil || err.Error() != want {
					t.Fatalf("Authenticate error = %v, want %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if c.Name() != tc.want {
				t.Fatalf("Authenticate = %q, want %q", c.Name(), tc.want)
			}
		})
	}
}
