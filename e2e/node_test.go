package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nodeCommand is one invocation of node/push.js.
type nodeCommand struct {
	URL       string             `json:"url"`
	Action    string             `json:"action"`
	Job       string             `json:"job"`
	Groupings map[string]string  `json:"groupings,omitempty"`
	Gauges    map[string]float64 `json:"gauges,omitempty"`
	Counters  map[string]float64 `json:"counters,omitempty"`
	Auth      string             `json:"auth,omitempty"`
	Bearer    string             `json:"bearer,omitempty"`
	CA        string             `json:"ca,omitempty"`
	Gzip      bool               `json:"gzip,omitempty"`
}

// requireNodeClient skips (or fails in CI) without node and the prom-client
// module installed in e2e/node by make test-deps.
func requireNodeClient(t *testing.T) {
	t.Helper()
	requireTool(t, "node")
	if _, err := os.Stat(filepath.Join("node", "node_modules", "prom-client")); err != nil {
		missingDependency(t, "e2e/node/node_modules/prom-client")
	}
}

// nodePush runs push.js and returns its output ("<status> <body>") and
// whether it succeeded.
func nodePush(t *testing.T, c nodeCommand) (string, bool) {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "push.js", string(b))
	cmd.Dir = "node"
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err == nil
}

// mustNode runs push.js and requires success with the given status.
func mustNode(t *testing.T, c nodeCommand, status string) {
	t.Helper()
	out, ok := nodePush(t, c)
	if !ok || !strings.HasPrefix(out, status+" ") && out != status {
		t.Fatalf("node %s %s%v: %q, want status %s", c.Action, c.Job, c.Groupings, out, status)
	}
}

// TestNodeClient pushes with prom-client's Pushgateway: push (PUT), pushAdd
// (POST) and delete. prom-client sends text without a Content-Type, chunked.
func TestNodeClient(t *testing.T) {
	requireNodeClient(t)
	g := startGateway(t)
	key := lbl("job", "node_job", "instance", "n1")
	base := nodeCommand{URL: g.URL, Job: "node_job", Groupings: map[string]string{"instance": "n1"}}

	c := base
	c.Action, c.Gauges, c.Counters = "push", map[string]float64{"node_a": 1.5, "node_b": 2}, map[string]float64{"node_runs_total": 3}
	mustNode(t, c, "200")
	mfs := scrape(t, g)
	mfs.requireValue(t, "node_a", key, 1.5)
	mfs.requireValue(t, "node_b", key, 2)
	mfs.requireValue(t, "node_runs_total", key, 3)
	if got := mfs["node_runs_total"].GetType().String(); got != "COUNTER" {
		t.Fatalf("node_runs_total type %s, want COUNTER", got)
	}

	t.Run("pushAdd replaces only its families", func(t *testing.T) {
		c := base
		c.Action, c.Gauges = "pushAdd", map[string]float64{"node_b": 20, "node_c": 30}
		mustNode(t, c, "200")
		mfs := scrape(t, g)
		mfs.requireValue(t, "node_a", key, 1.5)
		mfs.requireValue(t, "node_b", key, 20)
		mfs.requireValue(t, "node_c", key, 30)
	})

	t.Run("push replaces the group", func(t *testing.T) {
		c := base
		c.Action, c.Gauges = "push", map[string]float64{"node_c": 31}
		mustNode(t, c, "200")
		mfs := scrape(t, g)
		mfs.requireAbsent(t, "node_a", key)
		mfs.requireAbsent(t, "node_runs_total", key)
		mfs.requireValue(t, "node_c", key, 31)
	})

	t.Run("delete", func(t *testing.T) {
		c := base
		c.Action = "delete"
		mustNode(t, c, "202")
		eventually(t, waitTimeout, func() error {
			if len(scrape(t, g).series("push_time_seconds", key)) > 0 {
				return errorf("group still present after delete")
			}
			return nil
		})
	})

	t.Run("encoded values", func(t *testing.T) {
		// prom-client encodes values with encodeURIComponent: a space is %20
		// and '/' is %2F, which pushgate keeps inside the value (the
		// reference splits the path on it).
		c := nodeCommand{URL: g.URL, Job: "node/job", Action: "push",
			Groupings: map[string]string{"path": "/var/tmp", "instance": "a b"},
			Gauges:    map[string]float64{"node_enc": 5}}
		mustNode(t, c, "200")
		ekey := lbl("job", "node/job", "path", "/var/tmp", "instance", "a b")
		scrape(t, g).requireValue(t, "node_enc", ekey, 5)
		c.Action, c.Gauges = "delete", nil
		mustNode(t, c, "202")
		eventually(t, waitTimeout, func() error {
			if scrape(t, g).find("node_enc", ekey) != nil {
				return errorf("node_enc still present after delete")
			}
			return nil
		})
	})

	t.Run("rejected push rejects the promise", func(t *testing.T) {
		pushText(t, g, http.MethodPut, "/metrics/job/node_other", "# TYPE node_clash gauge\nnode_clash 1\n")
		c := nodeCommand{URL: g.URL, Job: "node_clash", Action: "push", Counters: map[string]float64{"node_clash": 1}}
		if out, ok := nodePush(t, c); ok || !strings.Contains(out, "400") {
			t.Fatalf("counter over gauge node_clash: ok=%v %q, want a failure with status 400", ok, out)
		}
	})
}
