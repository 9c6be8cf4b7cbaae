//go:build unix

package etcdtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestPushesGoOnWhileAnEtcdProcessIsStopped is
// TestPushesGoOnWhileOneEtcdMemberHangs with three etcd processes, one of
// which is stopped (SIGSTOP) for 6s: etcd's leader, whose peers then elect
// another leader, which extends every lease; and, separately, a follower.
// It needs the etcd 3.7 binary scripts/etcd.sh builds (PUSHGATE_ETCD37
// names another) and is skipped without it.
func TestPushesGoOnWhileAnEtcdProcessIsStopped(t *testing.T) {
	bin := etcdBinary(t)
	for _, tc := range []struct {
		name   string
		leader bool
	}{
		{"etcd's leader", true},
		{"a follower", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			members := startEtcdProcesses(t, bin, 3)
			f := hangFault{victim: -1}
			for _, m := range members {
				f.endpoints = append(f.endpoints, m.endpoint)
			}
			f.direct = f.endpoints
			for i, m := range members {
				if m.leads(t, f.endpoints) == tc.leader {
					f.victim = i
					break
				}
			}
			if f.victim < 0 {
				t.Fatal("no etcd member of the role wanted")
			}
			p := members[f.victim].cmd.Process
			f.hang = func() {
				if err := p.Signal(syscall.SIGSTOP); err != nil {
					t.Errorf("stop etcd: %v", err)
				}
			}
			f.resume = func() {
				if err := p.Signal(syscall.SIGCONT); err != nil {
					t.Errorf("resume etcd: %v", err)
				}
			}
			measureHang(t, f, 6*time.Second)
		})
	}
}

// etcdBinary returns the etcd 3.7 binary scripts/etcd.sh provides, or
// PUSHGATE_ETCD37, skipping the test when there is none.
func etcdBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("PUSHGATE_ETCD37")
	if bin == "" {
		out, err := exec.Command("go", "env", "GOCACHE").Output()
		if err != nil {
			t.Skipf("go env GOCACHE: %v", err)
		}
		bin = filepath.Join(strings.TrimSpace(string(out)), "..", "pushgate-tools", "etcd-v3.7.3", "etcd")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no etcd binary (%v): bash scripts/etcd.sh builds it", err)
	}
	return bin
}

// etcdProcess is one member of an etcd cluster of processes.
type etcdProcess struct {
	cmd      *exec.Cmd
	endpoint string
}

// startEtcdProcesses starts an n-member etcd cluster of bin on loopback
// ports, waits until every member answers with a leader, and stops it
// when the test ends.
func startEtcdProcesses(t *testing.T, bin string, n int) []*etcdProcess {
	t.Helper()
	ports := freePorts(t, 2*n)
	var initial []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, ports[2*i+1]))
	}
	dir := t.TempDir()
	var members []*etcdProcess
	for i := range n {
		client := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i])
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])
		logFile, err := os.Create(filepath.Join(dir, fmt.Sprintf("m%d.log", i)))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin,
			fmt.Sprintf("--name=m%d", i), "--data-dir="+filepath.Join(dir, fmt.Sprintf("m%d", i)),
			"--listen-client-urls="+client, "--advertise-client-urls="+client,
			"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
			"--initial-cluster="+strings.Join(initial, ","),
			"--initial-cluster-state=new", "--initial-cluster-token=pushgate-etcdtest")
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if err := cmd.Start(); err != nil {
			logFile.Close()
			t.Fatalf("start %s: %v", bin, err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGCONT)
			_ = cmd.Process.Signal(syscall.SIGTERM)
			timer := time.AfterFunc(15*time.Second, func() { _ = cmd.Process.Kill() })
			_ = cmd.Wait()
			timer.Stop()
			logFile.Close()
		})
		members = append(members, &etcdProcess{cmd: cmd, endpoint: client})
	}
	var eps []string
	for _, m := range members {
		eps = append(eps, m.endpoint)
	}
	eventually(t, 30*time.Second, "every etcd member answers with a leader", func() bool {
		for _, m := range members {
			if m.leader(eps) == 0 {
				return false
			}
		}
		return true
	})
	return members
}

// leader returns the member ID of the leader m knows, 0 when it knows
// none or does not answer.
func (m *etcdProcess) leader(eps []string) uint64 {
	lead, _ := m.status(eps)
	return lead
}

// leads reports whether m is etcd's leader.
func (m *etcdProcess) leads(t *testing.T, eps []string) bool {
	t.Helper()
	lead, id := m.status(eps)
	if lead == 0 {
		t.Fatalf("etcd member at %s knows no leader", m.endpoint)
	}
	return lead == id
}

// status returns the leader m knows and m's own member ID.
func (m *etcdProcess) status(eps []string) (leader, id uint64) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return 0, 0
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := cli.Status(ctx, m.endpoint)
	if err != nil {
		return 0, 0
	}
	return resp.Leader, resp.Header.MemberId
}
