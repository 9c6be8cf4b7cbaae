package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// pythonAuthPrelude follows pythonPrelude: handlers that send basic auth
// or a bearer token taken from the environment, as a batch job would.
const pythonAuthPrelude = `
import os
from prometheus_client.exposition import basic_auth_handler, default_handler
def basic(url, method, timeout, headers, data):
    return basic_auth_handler(url, method, timeout, headers, data, os.environ['PG_USER'], os.environ['PG_PASSWORD'])
def bearer(url, method, timeout, headers, data):
    return default_handler(url, method, timeout, headers + [('Authorization', 'Bearer ' + os.environ['PG_TOKEN'])], data)
`

// pythonWithEnv runs a script after both preludes with extra environment
// variables and returns its output and whether it succeeded.
func pythonWithEnv(t *testing.T, url, gauges, script string, env ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(debianPython, "-c", pythonPrelude+pythonAuthPrelude+script, url, gauges)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// TestPythonAndNodePushWithCredentials pushes with the permissions file's
// credentials from both clients: basic auth and bearer tokens land within
// their selectors, a wrong secret raises 401, a job outside the selectors
// raises 403 and stores nothing, and deletes need the credential too.
func TestPythonAndNodePushWithCredentials(t *testing.T) {
	requirePythonClient(t)
	requireNodeClient(t)
	h := newPermissionHashes(t)
	g, _ := startPermissionGateway(t, h.file("ci-token"))
	reader := basicAuthHeader("prometheus", "prom-pw")
	backup := []string{"PG_USER=backup", "PG_PASSWORD=backup-pw"}

	t.Run("python basic auth", func(t *testing.T) {
		if out, ok := pythonWithEnv(t, g.URL, `{"py_backup_bytes": 7}`, `
push_to_gateway(gw, job='backup-db', registry=reg, grouping_key={'instance': 'py'}, handler=basic)
`, backup...); !ok {
			t.Fatalf("push with basic auth failed:\n%s", out)
		}
		key := lbl("job", "backup-db", "instance", "py")
		scrapeAs(t, g, reader).requireValue(t, "py_backup_bytes", key, 7)

		out, ok := pythonWithEnv(t, g.URL, `{"py_backup_bytes": 8}`, `
push_to_gateway(gw, job='backup-db', registry=reg, grouping_key={'instance': 'py'}, handler=basic)
`, "PG_USER=backup", "PG_PASSWORD=wrong")
		if ok || !strings.Contains(out, "401") {
			t.Fatalf("push with a wrong password: ok=%v\n%s\nwant an HTTPError 401", ok, out)
		}
		out, ok = pythonWithEnv(t, g.URL, `{"py_other": 1}`, `
push_to_gateway(gw, job='other', registry=reg, handler=basic)
`, backup...)
		if ok || !strings.Contains(out, "403") {
			t.Fatalf("push outside the credential's selectors: ok=%v\n%s\nwant an HTTPError 403", ok, out)
		}
		mfs := scrapeAs(t, g, reader)
		mfs.requireValue(t, "py_backup_bytes", key, 7)
		mfs.requireAbsent(t, "py_other", lbl("job", "other", "instance", ""))

		if out, ok := pythonWithEnv(t, g.URL, `{}`, `
delete_from_gateway(gw, job='backup-db', grouping_key={'instance': 'py'}, handler=basic)
`, backup...); !ok {
			t.Fatalf("delete with basic auth failed:\n%s", out)
		}
		scrapeAs(t, g, reader).requireAbsent(t, "py_backup_bytes", key)
	})

	t.Run("python bearer token", func(t *testing.T) {
		if out, ok := pythonWithEnv(t, g.URL, `{"py_ci_tests": 120}`, `
pushadd_to_gateway(gw, job='ci-build', registry=reg, handler=bearer)
`, "PG_TOKEN=ci-token"); !ok {
			t.Fatalf("push with a bearer token failed:\n%s", out)
		}
		scrapeAs(t, g, reader).requireValue(t, "py_ci_tests", lbl("job", "ci-build", "instance", ""), 120)
		out, ok := pythonWithEnv(t, g.URL, `{"py_ci_tests": 1}`, `
push_to_gateway(gw, job='backup-ci', registry=reg, handler=bearer)
`, "PG_TOKEN=ci-token")
		if ok || !strings.Contains(out, "403") {
			t.Fatalf("bearer push outside its selectors: ok=%v\n%s\nwant an HTTPError 403", ok, out)
		}
	})

	t.Run("node basic auth and bearer token", func(t *testing.T) {
		base := nodeCommand{URL: g.URL, Job: "backup-node", Groupings: map[string]string{"instance": "n1"}, Auth: "backup:backup-pw"}
		c := base
		c.Action, c.Gauges, c.Gzip = "push", map[string]float64{"node_backup_files": 12}, true
		mustNode(t, c, "200")
		key := lbl("job", "backup-node", "instance", "n1")
		scrapeAs(t, g, reader).requireValue(t, "node_backup_files", key, 12)

		c.Auth, c.Gauges = "backup:wrong", map[string]float64{"node_backup_files": 13}
		if out, ok := nodePush(t, c); ok || !strings.Contains(out, "401") {
			t.Fatalf("node push with a wrong password: ok=%v %q, want a failure with status 401", ok, out)
		}
		c = nodeCommand{URL: g.URL, Job: "ci-node", Action: "pushAdd", Bearer: "ci-token", Counters: map[string]float64{"node_ci_runs_total": 2}}
		mustNode(t, c, "200")
		scrapeAs(t, g, reader).requireValue(t, "node_ci_runs_total", lbl("job", "ci-node", "instance", ""), 2)
		c.Job = "backup-node"
		if out, ok := nodePush(t, c); ok || !strings.Contains(out, "403") {
			t.Fatalf("node bearer push outside its selectors: ok=%v %q, want a failure with status 403", ok, out)
		}

		c = base
		c.Action = "delete"
		mustNode(t, c, "202")
		mfs := scrapeAs(t, g, reader)
		mfs.requireAbsent(t, "node_backup_files", key)
		mfs.requireValue(t, "node_ci_runs_total", lbl("job", "ci-node", "instance", ""), 2)
	})
}

// TestPythonAndNodePushOverTLS pushes from both clients to a gateway that
// serves TLS with basic auth from --web.config.file (the exporter-toolkit
// format), trusting the test CA, and reads the values back.
func TestPythonAndNodePushOverTLS(t *testing.T) {
	requirePythonClient(t)
	requireNodeClient(t)
	pki := newTestPKI(t)
	cfg := pki.tlsBasicAuthConfig(t, "pusher", "push-pw")
	client := pki.httpsClient(false)
	auth := basicAuthHeader("pusher", "push-pw")
	g := startTLSGateway(t, client, auth, "--web.config.file="+cfg)

	if out, ok := pythonWithEnv(t, g.URL, `{"py_tls_value": 3}`, `
push_to_gateway(gw, job='tls_py', registry=reg, handler=basic)
`, "PG_USER=pusher", "PG_PASSWORD=push-pw", "SSL_CERT_FILE="+pki.caFile); !ok {
		t.Fatalf("python push over TLS failed:\n%s", out)
	}
	if out, ok := pythonWithEnv(t, g.URL, `{"py_tls_value": 4}`, `
push_to_gateway(gw, job='tls_py', registry=reg, handler=basic)
`, "PG_USER=pusher", "PG_PASSWORD=push-pw"); ok || !strings.Contains(out, "CERTIFICATE_VERIFY_FAILED") {
		t.Fatalf("python push without the CA: ok=%v\n%s\nwant a certificate verification error", ok, out)
	}
	mustNode(t, nodeCommand{URL: g.URL, Job: "tls_node", Action: "push", Auth: "pusher:push-pw", CA: pki.caFile,
		Gauges: map[string]float64{"node_tls_value": 5}}, "200")
	if out, ok := nodePush(t, nodeCommand{URL: g.URL, Job: "tls_node", Action: "push", Auth: "pusher:wrong", CA: pki.caFile,
		Gauges: map[string]float64{"node_tls_value": 6}}); ok || !strings.Contains(out, "401") {
		t.Fatalf("node push over TLS with a wrong password: ok=%v %q, want status 401", ok, out)
	}

	code, body, err := getWith(client, g.url("/metrics"), auth)
	if err != nil || code != 200 {
		t.Fatalf("scrape over TLS: %d, %v", code, err)
	}
	mfs, err := parseText([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	mfs.requireValue(t, "py_tls_value", lbl("job", "tls_py", "instance", ""), 3)
	mfs.requireValue(t, "node_tls_value", lbl("job", "tls_node", "instance", ""), 5)
}
