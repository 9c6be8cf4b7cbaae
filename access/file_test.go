package access

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// gaugeValue reads a gauge.
func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

func reloadSuccess(t *testing.T, f *PolicyFile) float64 {
	t.Helper()
	return gaugeValue(t, f.reloadSuccess)
}

func TestPolicyFileReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "permissions.yml")
	one := "credentials:\n  - {name: one, bearer_token_hash: '" + hashOf(t, "t1") + "', push: ['{job=\"a\"}']}\n"
	two := "credentials:\n  - {name: two, bearer_token_hash: '" + hashOf(t, "t2") + "', push: ['{job=\"b\"}']}\n"
	writeFile(t, path, one)
	reg := prometheus.NewRegistry()
	f, err := LoadPolicyFile(path, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	authenticates := func(token string) bool {
		_, err := f.Policy().Authenticate(request("Bearer " + token))
		return err == nil
	}
	if !authenticates("t1") || authenticates("t2") {
		t.Fatal("initial policy is not file one")
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	if got := strings.Join(names, ","); got != "pushgate_permissions_last_reload_success_timestamp_seconds,pushgate_permissions_reload_success" {
		t.Fatalf("registered metrics: %s", got)
	}
	last := gaugeValue(t, f.lastSuccess)
	if last <= 0 {
		t.Fatalf("last success timestamp %v, want > 0", last)
	}

	// A bad file keeps the old policy and says why.
	writeFile(t, path, strings.Replace(two, "name: two", "name: two, bogus: 1", 1))
	err = f.Reload()
	if err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("Reload of a bad file: err = %v, want one naming the bad field", err)
	}
	if !authenticates("t1") || authenticates("t2") {
		t.Fatal("a bad file replaced the policy")
	}
	if got := reloadSuccess(t, f); got != 0 {
		t.Fatalf("reload_success = %v after a failed reload, want 0", got)
	}
	if got := gaugeValue(t, f.lastSuccess); got != last {
		t.Fatalf("last success timestamp moved on a failed reload: %v -> %v", last, got)
	}

	// A missing file is a failed reload too.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := f.Reload(); err == nil {
		t.Fatal("Reload of a missing file succeeded")
	}
	if !authenticates("t1") {
		t.Fatal("a missing file replaced the policy")
	}

	// A good file replaces it.
	writeFile(t, path, two)
	if err := f.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if authenticates("t1") || !authenticates("t2") {
		t.Fatal("the good file is not in force")
	}
	if got := reloadSuccess(t, f); got != 1 {
		t.Fatalf("reload_success = %v, want 1", got)
	}
}

func TestLoadPolicyFileFailsOnABadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "permissions.yml")
	writeFile(t, path, "credentials:\n  - {name: a, bearer_token_hash: plain}\n")
	_, err := LoadPolicyFile(path, nil, nil)
	if err == nil || !strings.Contains(err.Error(), `credential "a": bearer_token_hash: not a bcrypt hash`) {
		t.Fatalf("LoadPolicyFile error = %v", err)
	}
	if _, err := LoadPolicyFile(filepath.Join(t.TempDir(), "absent.yml"), nil, nil); err == nil {
		t.Fatal("LoadPolicyFile of a missing file succeeded")
	}
}
