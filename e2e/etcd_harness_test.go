package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// etcdServers maps a name ("3.7", "3.4") to an etcd binary, as
// scripts/etcd.sh provides them (PUSHGATE_ETCD37, PUSHGATE_ETCD34 override).
func etcdServers(t *testing.T) map[string]string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOCACHE: %v", err)
	}
	tools := filepath.Join(strings.TrimSpace(string(out)), "..", "pushgate-tools")
	servers := map[string]string{
		"3.7": envOr("PUSHGATE_ETCD37", filepath.Join(tools, "etcd-v3.7.3", "etcd")),
		"3.4": envOr("PUSHGATE_ETCD34", filepath.Join(tools, "etcd-server-3.4.23", "usr", "bin", "etcd")),
	}
	for name, bin := range servers {
		if _, err := os.Stat(bin); err != nil {
			missingDependency(t, fmt.Sprintf("etcd %s (%s; scripts/etcd.sh provides it)", name, bin))
		}
	}
	return servers
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// etcdMember is one member of a loopback etcd cluster.
type etcdMember struct {
	*process
	name, clientURL string
}

// startEtcd starts an n-member etcd cluster of bin on loopback ports and
// waits until every member is healthy.
func startEtcd(t *testing.T, bin string, n int) []*etcdMember {
	t.Helper()
	type addrs struct{ name, client, peer string }
	var as []addrs
	var initial []string
	for i := range n {
		a := addrs{
			name:   fmt.Sprintf("m%d", i),
			client: fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
			peer:   fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
		}
		as = append(as, a)
		initial = append(initial, a.name+"="+a.peer)
	}
	var members []*etcdMember
	for _, a := range as {
		p := startProcess(t, "etcd-"+a.name, bin,
			"--name="+a.name,
			"--data-dir="+filepath.Join(t.TempDir(), a.name),
			"--listen-client-urls="+a.client, "--advertise-client-urls="+a.client,
			"--listen-peer-urls="+a.peer, "--initial-advertise-peer-urls="+a.peer,
			"--initial-cluster="+strings.Join(initial, ","),
			"--initial-cluster-state=new", "--initial-cluster-token=pushgate-e2e",
		)
		members = append(members, &etcdMember{process: p, name: a.name, clientURL: a.client})
	}
	for _, m := range members {
		eventually(t, readyTimeout, func() error {
			if m.exited() {
				t.Fatalf("etcd %s exited:\n%s", m.name, m.logTail(8<<10))
			}
			r, err := doRequest(bgCtx, http.MethodGet, m.clientURL+"/health", nil)
			if err != nil {
				return err
			}
			if !bytes.Contains(r.Body, []byte(`"health":"true"`)) {
				return errorf("etcd %s: %s", m.name, r)
			}
			return nil
		})
	}
	return members
}

// endpoints joins the members' client URLs.
func endpoints(members []*etcdMember) string {
	var urls []string
	for _, m := range members {
		urls = append(urls, m.clientURL)
	}
	return strings.Join(urls, ",")
}

// etcdLeader returns the member etcd elected leader, asking each live
// member through etcd's JSON gateway.
func etcdLeader(t *testing.T, members []*etcdMember) *etcdMember {
	t.Helper()
	var status struct {
		Header struct {
			MemberID string `json:"member_id"`
		} `json:"header"`
		Leader string `json:"leader"`
	}
	var leader *etcdMember
	eventually(t, waitTimeout, func() error {
		for _, m := range members {
			if m.exited() {
				continue
			}
			r, err := doRequest(bgCtx, http.MethodPost, m.clientURL+"/v3/maintenance/status", []byte("{}"))
			if err != nil {
				return err
			}
			if err := json.Unmarshal(r.Body, &status); err != nil {
				return errorf("status of %s: %v: %s", m.name, err, r)
			}
			if status.Leader != "" && status.Header.MemberID == status.Leader {
				leader = m
				return nil
			}
		}
		return errorf("no etcd member says it leads")
	})
	return leader
}

// replica is a pushgate cluster replica.
type replica struct {
	*gateway
	killed bool
}

// startReplicas starts n pushgate replicas on the etcd cluster, with extra
// flags, and waits until each is ready.
func startReplicas(t *testing.T, members []*etcdMember, n int, flags ...string) []*replica {
	t.Helper()
	var rs []*replica
	for range n {
		g := startGateway(t, append([]string{"--cluster.etcd.endpoints=" + endpoints(members), "--web.enable-admin-api"}, flags...)...)
		rs = append(rs, &replica{gateway: g})
	}
	return rs
}

// kill ends a replica with SIGKILL: no goodbye to etcd.
func (r *replica) kill(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill replica: %v", err)
	}
	r.wait(10 * time.Second)
	r.killed = true
}

// clusterGauges reads a replica's pushgate_cluster_* gauges.
func clusterGauges(g *gateway) (leading, ready bool, applied uint64, err error) {
	fams, err := scrapeErr(bgCtx, g.url("/metrics"))
	if err != nil {
		return false, false, 0, err
	}
	get := func(name string) float64 {
		if mf := fams[name]; mf != nil && len(mf.GetMetric()) == 1 {
			return sampleValue(mf.GetMetric()[0])
		}
		return -1
	}
	return get("pushgate_cluster_leader") == 1, get("pushgate_cluster_ready") == 1, uint64(get("pushgate_cluster_applied_position")), nil
}

// live returns the replicas not killed.
func live(rs []*replica) []*replica {
	var out []*replica
	for _, r := range rs {
		if !r.killed {
			out = append(out, r)
		}
	}
	return out
}

// leaderOf returns the replica that leads, polling until one does.
func leaderOf(t *testing.T, rs []*replica, timeout time.Duration) *replica {
	t.Helper()
	var leader *replica
	eventually(t, timeout, func() error {
		for _, r := range live(rs) {
			if leading, _, _, err := clusterGauges(r.gateway); err == nil && leading {
				leader = r
				return nil
			}
		}
		return errorf("no replica leads")
	})
	return leader
}

// converge waits until every live replica is ready at one applied
// position, and returns it.
func converge(t *testing.T, rs []*replica) uint64 {
	t.Helper()
	var pos uint64
	eventually(t, 30*time.Second, func() error {
		var seen []uint64
		for _, r := range live(rs) {
			_, ready, applied, err := clusterGauges(r.gateway)
			if err != nil {
				return err
			}
			if !ready {
				return errorf("%s not ready", r.Addr)
			}
			seen = append(seen, applied)
		}
		for _, p := range seen {
			if p != seen[0] {
				return errorf("applied positions differ: %v", seen)
			}
		}
		pos = seen[0]
		return nil
	})
	return pos
}

// pushedText returns the lines of a /metrics text body that belong to
// pushed families (HELP, TYPE and samples), leaving out the gateway's own.
func pushedText(body []byte) string {
	var out []string
	for _, line := range strings.Split(string(body), "\n") {
		name := line
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name = rest
		} else if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name = rest
		}
		name, _, _ = strings.Cut(name, " ")
		name, _, _ = strings.Cut(name, "{")
		if line == "" || isOwnMetric(name) {
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// load pushes distinct groups through the replicas' URLs, round robin,
// from several workers, and records every acknowledged push.
type load struct {
	mu    sync.Mutex
	urls  []string
	acked map[string]int // instance -> value, for every 2xx
	// failed counts the other answers by status ("error": no answer).
	failed map[string]int
	// lastOK is when the latest 2xx arrived; maxGap the longest time
	// between two consecutive 2xx (write unavailability).
	lastOK time.Time
	maxGap time.Duration
	stop   chan struct{}
	wg     sync.WaitGroup
}

// startLoad starts workers pushing through urls.
func startLoad(urls []string, workers int) *load {
	l := &load{urls: urls, acked: map[string]int{}, failed: map[string]int{}, stop: make(chan struct{}), lastOK: time.Now()}
	for w := range workers {
		l.wg.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-l.stop:
					return
				default:
				}
				l.mu.Lock()
				u := l.urls[(w+k)%len(l.urls)]
				l.mu.Unlock()
				instance := fmt.Sprintf("w%d-%d", w, k)
				r, err := doRequest(bgCtx, http.MethodPut, u+"/metrics/job/load/instance/"+instance, fmt.Appendf(nil, "load_value %d\n", k))
				l.mu.Lock()
				if err == nil && r.Status == http.StatusOK {
					l.acked[instance] = k
					now := time.Now()
					l.maxGap = max(l.maxGap, now.Sub(l.lastOK))
					l.lastOK = now
				} else if err != nil {
					l.failed["error"]++
				} else {
					l.failed[fmt.Sprintf("%d %s", r.Status, clip(r.Body))]++
				}
				l.mu.Unlock()
			}
		})
	}
	return l
}

// drop stops sending to url.
func (l *load) drop(url string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, u := range l.urls {
		if u == url {
			l.urls = append(l.urls[:i:i], l.urls[i+1:]...)
			return
		}
	}
}

// ackedCount returns how many pushes were acknowledged so far.
func (l *load) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// finish stops the workers.
func (l *load) finish() {
	close(l.stop)
	l.wg.Wait()
}

// requireAcked checks that every acknowledged push shows on every live
// replica.
func (l *load) requireAcked(t *testing.T, rs []*replica) {
	t.Helper()
	for _, r := range live(rs) {
		fams := scrape(t, r.gateway)
		missing := 0
		for instance, k := range l.acked {
			m := fams.find("load_value", lbl("job", "load", "instance", instance))
			if m == nil || sampleValue(m) != float64(k) {
				missing++
			}
		}
		if missing > 0 {
			t.Errorf("%s lacks %d of %d acknowledged pushes", r.Addr, missing, len(l.acked))
		}
	}
}
