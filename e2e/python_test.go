package e2e

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"testing"
)

// debianPython is the interpreter that sees Debian's python3-prometheus-client
// (a python3 earlier on PATH, e.g. from pyenv, does not).
const debianPython = "/usr/bin/python3"

// pythonPrelude is prepended to every script: it names the gateway (argv[1])
// and builds a registry with the gauges given as JSON in argv[2].
const pythonPrelude = `
import json, sys
from prometheus_client import CollectorRegistry, Gauge, Counter
from prometheus_client import push_to_gateway, pushadd_to_gateway, delete_from_gateway
gw = sys.argv[1]
reg = CollectorRegistry()
for name, value in json.loads(sys.argv[2]).items():
    Gauge(name, 'Python gauge ' + name + '.', registry=reg).set(value)
`

// requirePythonClient skips (or fails in CI) without Debian's python3 and its
// prometheus_client module.
func requirePythonClient(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(debianPython); err != nil {
		missingDependency(t, debianPython)
	}
	if err := exec.Command(debianPython, "-c", "import prometheus_client").Run(); err != nil {
		missingDependency(t, "python3-prometheus-client")
	}
}

// python runs a script after pythonPrelude with the gateway URL and a JSON
// object of gauges, failing the test when it raises.
func python(t *testing.T, g *gateway, gauges, script string) {
	t.Helper()
	cmd := exec.Command(debianPython, "-c", pythonPrelude+script, g.URL, gauges)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("python script failed: %v\n%s\nscript:%s", err, out.String(), script)
	}
}

// TestPythonClient pushes with prometheus_client's push_to_gateway (PUT),
// pushadd_to_gateway (POST) and delete_from_gateway, including a grouping
// key with '/' (sent as padded base64) and one with a space (sent as '+').
func TestPythonClient(t *testing.T) {
	requirePythonClient(t)
	g := startGateway(t)
	key := lbl("job", "py_job", "instance", "py1")

	python(t, g, `{"py_a": 1.5, "py_b": 2}`, `
c = Counter('py_runs', 'Python counter.', registry=reg)
c.inc(3)
push_to_gateway(gw, job='py_job', registry=reg, grouping_key={'instance': 'py1'})
`)
	mfs := scrape(t, g)
	mfs.requireValue(t, "py_a", key, 1.5)
	mfs.requireValue(t, "py_b", key, 2)
	mfs.requireValue(t, "py_runs_total", key, 3)
	if help := mfs["py_a"].GetHelp(); help != "Python gauge py_a." {
		t.Fatalf("HELP = %q", help)
	}

	t.Run("pushadd replaces only its families", func(t *testing.T) {
		python(t, g, `{"py_b": 20, "py_c": 30}`, `
pushadd_to_gateway(gw, job='py_job', registry=reg, grouping_key={'instance': 'py1'})
`)
		mfs := scrape(t, g)
		mfs.requireValue(t, "py_a", key, 1.5)
		mfs.requireValue(t, "py_b", key, 20)
		mfs.requireValue(t, "py_c", key, 30)
	})

	t.Run("push replaces the group", func(t *testing.T) {
		python(t, g, `{"py_c": 31}`, `
push_to_gateway(gw, job='py_job', registry=reg, grouping_key={'instance': 'py1'})
`)
		mfs := scrape(t, g)
		mfs.requireAbsent(t, "py_a", key)
		mfs.requireAbsent(t, "py_runs_total", key)
		mfs.requireValue(t, "py_c", key, 31)
	})

	t.Run("grouping key with a slash", func(t *testing.T) {
		python(t, g, `{"py_path": 4}`, `
push_to_gateway(gw, job='py_paths', registry=reg, grouping_key={'path': '/var/tmp', 'instance': 'a b'})
`)
		pkey := lbl("job", "py_paths", "path", "/var/tmp", "instance", "a+b")
		scrape(t, g).requireValue(t, "py_path", pkey, 4)
		python(t, g, `{}`, `
delete_from_gateway(gw, job='py_paths', grouping_key={'path': '/var/tmp', 'instance': 'a b'})
`)
		eventually(t, waitTimeout, func() error {
			if scrape(t, g).find("py_path", pkey) != nil {
				return errorf("py_path still present after delete_from_gateway")
			}
			return nil
		})
	})

	t.Run("delete", func(t *testing.T) {
		python(t, g, `{}`, `
delete_from_gateway(gw, job='py_job', grouping_key={'instance': 'py1'})
`)
		eventually(t, waitTimeout, func() error {
			if len(scrape(t, g).series("push_time_seconds", key)) > 0 {
				return errorf("group still present after delete_from_gateway")
			}
			return nil
		})
	})

	t.Run("rejected push raises", func(t *testing.T) {
		// A gauge over the counter family py_runs_total of another group.
		pushText(t, g, http.MethodPut, "/metrics/job/py_other", "# TYPE py_clash counter\npy_clash 1\n")
		cmd := exec.Command(debianPython, "-c", pythonPrelude+`
push_to_gateway(gw, job='py_clash', registry=reg)
`, g.URL, `{"py_clash": 1}`)
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Fatalf("push of a conflicting type did not raise:\n%s", out)
		}
	})
}
