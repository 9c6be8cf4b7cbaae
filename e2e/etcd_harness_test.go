package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
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
		waitEtcdHealthy(t, m)
	}
	return members
}

// waitEtcdHealthy waits until member m says it is healthy (it has a leader
// and answers reads).
func waitEtcdHealthy(t *testing.T, m *etcdMember) {
	t.Helper()
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

// restartEtcdMember starts member m again, after it died, with the same
// arguments: its name, addresses and data directory, so it rejoins the
// cluster as itself. owner holds the new process: it outlives the subtest
// t that restarts it, for the subtests after.
func restartEtcdMember(t, owner *testing.T, m *etcdMember) *etcdMember {
	t.Helper()
	if !m.exited() {
		t.Fatalf("restart etcd %s: still running", m.name)
	}
	p := startProcessOwned(t, owner, "etcd-"+m.name, m.cmd.Path, m.cmd.Args[1:]...)
	nm := &etcdMember{process: p, name: m.name, clientURL: m.clientURL}
	waitEtcdHealthy(t, nm)
	return nm
}

// pause stops the process with SIGSTOP, as a hang would (a stalled disk,
// a frozen VM): it keeps its sockets, so peers connected to it get no
// answer rather than a refusal. It returns once the kernel shows the
// process stopped, so that nothing it does can be dated after the return.
// The subtest's end resumes it, should the test fail before resume.
func (p *process) pause(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP %s: %v", p.name, err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Signal(syscall.SIGCONT) })
	eventually(t, 5*time.Second, func() error {
		if state := processState(p.cmd.Process.Pid); state != "T" && state != "t" {
			return errorf("%s (pid %d) is in state %q after SIGSTOP", p.name, p.cmd.Process.Pid, state)
		}
		return nil
	})
}

// resume continues a process stopped by pause.
func (p *process) resume(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT %s: %v", p.name, err)
	}
}

// processState returns the state letter of process pid from
// /proc/pid/stat ("R", "S", "T", ...), "" when it cannot be read.
func processState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// "pid (comm) state ...": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	return string(b[i+2])
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

// restartReplica starts replica r again, after it died, with the same
// flags and address, and waits until it is ready. owner holds the new
// process: it outlives the subtest t that restarts it.
func restartReplica(t, owner *testing.T, r *replica) *replica {
	t.Helper()
	if !r.exited() {
		t.Fatal("restart replica: still running")
	}
	p := startProcessOwned(t, owner, "gateway", r.cmd.Path, r.cmd.Args[1:]...)
	g := &gateway{process: p, URL: r.URL, Addr: r.Addr}
	if !waitReady(t, p, g.url("/-/ready")) {
		t.Fatalf("restarted replica %s did not become ready; log:\n%s", r.Addr, p.logTail(16<<10))
	}
	return &replica{gateway: g}
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

// othersThan returns the live replicas but r, and their URLs.
func othersThan(rs []*replica, r *replica) (others []*replica, urls []string) {
	for _, o := range live(rs) {
		if o != r {
			others = append(others, o)
			urls = append(urls, o.URL)
		}
	}
	return others, urls
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
	// failed counts the other answers by status ("error": no answer),
	// and failedAt holds when each kind came first and last.
	failed   map[string]int
	failedAt map[string][2]time.Time
	// lastOK is when the latest 2xx arrived; maxGap the longest time
	// between two consecutive 2xx (write unavailability).
	lastOK time.Time
	maxGap time.Duration
	// maxLatency is the longest a single request waited for its answer
	// (of any status); maxPush the longest from a push's first request to
	// its acknowledgement, the retries of a retrying load included.
	maxLatency, maxPush time.Duration
	// acks holds, for every acknowledged request, when it was sent and
	// when its answer came.
	acks []ack
	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// ack is one acknowledged request's timing.
type ack struct{ sent, answered time.Time }

// loadOptions configures startLoad.
type loadOptions struct {
	// tag names the load's groups (job "load", instance tag-wW-K) apart
	// from every other load's of the test, so that a push one load lost
	// is not hidden by another's of the same value.
	tag     string
	workers int
	// retry resends a push answered 503, or not answered, to the next
	// URL after retryPause, until it is acknowledged or the load stops,
	// as a careful client does; without it a worker goes on to its next
	// group.
	retry bool
	// pace is a worker's pause between two groups: it bounds the groups
	// a long fault piles up, and the CPU the load takes from the cluster
	// on a small machine.
	pace time.Duration
}

// retryPause is a retrying load's pause before resending a push. Shorter
// than the Retry-After a 503 carries (1s), so that the stretch measured
// without an acknowledgement is the cluster's, not the client's.
const retryPause = 100 * time.Millisecond

// startLoad starts workers pushing through urls.
func startLoad(urls []string, opts loadOptions) *load {
	l := &load{urls: urls, acked: map[string]int{}, failed: map[string]int{}, failedAt: map[string][2]time.Time{}, stop: make(chan struct{}), lastOK: time.Now()}
	for w := range opts.workers {
		l.wg.Go(func() {
			for k := 0; ; k++ {
				if !l.sleep(0) {
					return
				}
				instance := fmt.Sprintf("%s-w%d-%d", opts.tag, w, k)
				body := fmt.Appendf(nil, "load_value %d\n", k)
				first := time.Now()
				for attempt := 0; ; attempt++ {
					if attempt > 0 && !l.sleep(retryPause) {
						return
					}
					l.mu.Lock()
					u := l.urls[(w+k+attempt)%len(l.urls)]
					l.mu.Unlock()
					sent := time.Now()
					r, err := doRequest(bgCtx, http.MethodPut, u+"/metrics/job/load/instance/"+instance, body)
					now := time.Now()
					ok := err == nil && r.Status == http.StatusOK
					l.mu.Lock()
					l.maxLatency = max(l.maxLatency, now.Sub(sent))
					switch {
					case ok:
						l.acked[instance] = k
						l.acks = append(l.acks, ack{sent: sent, answered: now})
						l.maxGap = max(l.maxGap, now.Sub(l.lastOK))
						l.maxPush = max(l.maxPush, now.Sub(first))
						l.lastOK = now
					default:
						kind := "error"
						if err == nil {
							kind = fmt.Sprintf("%d %s", r.Status, strings.TrimSpace(clip(r.Body)))
						}
						l.failed[kind]++
						at := l.failedAt[kind]
						if at[0].IsZero() {
							at[0] = now
						}
						at[1] = now
						l.failedAt[kind] = at
					}
					l.mu.Unlock()
					if ok || !opts.retry || err == nil && r.Status != http.StatusServiceUnavailable {
						break
					}
				}
				if !l.sleep(opts.pace) {
					return
				}
			}
		})
	}
	return l
}

// sleep waits d unless the load stops first; it reports whether the load
// goes on.
func (l *load) sleep(d time.Duration) bool {
	if d <= 0 {
		select {
		case <-l.stop:
			return false
		default:
			return true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-l.stop:
		return false
	case <-t.C:
		return true
	}
}

// snapshot returns a copy of the acknowledged pushes so far.
func (l *load) snapshot() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.acked))
	for instance, k := range l.acked {
		out[instance] = k
	}
	return out
}

// ackedSince counts the requests acknowledged after t.
func (l *load) ackedSince(t time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, a := range l.acks {
		if a.answered.After(t) {
			n++
		}
	}
	return n
}

// report logs what the load measured: the longest stretch with no push
// acknowledged, the longest waits, and the answers other than 2xx with
// when they came, counted from the fault at faultAt. The figures are
// logged, never asserted: the machine is shared, and they vary with its
// load.
func (l *load) report(t *testing.T, faultAt time.Time) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("%d pushes acknowledged; longest stretch with no push acknowledged %s; longest single request %s, longest push (first request to acknowledgement) %s",
		len(l.acked), l.maxGap.Round(time.Millisecond), l.maxLatency.Round(time.Millisecond), l.maxPush.Round(time.Millisecond))
	kinds := make([]string, 0, len(l.failed))
	for kind := range l.failed {
		kinds = append(kinds, kind)
	}
	sort.Strings(kinds)
	for _, kind := range kinds {
		at := l.failedAt[kind]
		t.Logf("  %d× %q, %s to %s after the fault", l.failed[kind], kind, at[0].Sub(faultAt).Round(time.Millisecond), at[1].Sub(faultAt).Round(time.Millisecond))
	}
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

// finish stops the workers and waits for their requests under way; it
// may be called again (a test's cleanup calls it too, should the test
// fail before it does).
func (l *load) finish() {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// waitAcked waits until n requests were acknowledged after since, at most
// timeout, and returns how long after since the first of them was.
func (l *load) waitAcked(t *testing.T, since time.Time, n int, timeout time.Duration) time.Duration {
	t.Helper()
	eventually(t, timeout, func() error {
		if got := l.ackedSince(since); got < n {
			return errorf("%d pushes acknowledged since %s, want %d (other answers %v)", got, since.Format("15:04:05.000"), n, l.failures())
		}
		return nil
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	first := time.Duration(-1)
	for _, a := range l.acks {
		if d := a.answered.Sub(since); d > 0 && (first < 0 || d < first) {
			first = d
		}
	}
	return first
}

// failures returns a copy of the count of answers other than 2xx.
func (l *load) failures() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.failed))
	for k, v := range l.failed {
		out[k] = v
	}
	return out
}

// requireAcked checks that every acknowledged push shows on every live
// replica.
func (l *load) requireAcked(t *testing.T, rs []*replica) {
	t.Helper()
	for _, r := range live(rs) {
		fams, err := parseText(servedBody(t, r.gateway))
		if err != nil {
			t.Fatalf("%s: %v", r.Addr, err)
		}
		if missing := missingAcked(fams, l.acked); len(missing) > 0 {
			t.Errorf("%s lacks %d of %d acknowledged pushes (e.g. %v)", r.Addr, len(missing), len(l.acked), missing[:min(len(missing), 5)])
		}
	}
}

// missingAcked returns the acknowledged pushes (instance -> value) whose
// value a scrape does not show, sorted.
func missingAcked(fams families, acked map[string]int) []string {
	var missing []string
	for instance, k := range acked {
		m := fams.find("load_value", lbl("job", "load", "instance", instance))
		if m == nil || sampleValue(m) != float64(k) {
			missing = append(missing, instance)
		}
	}
	sort.Strings(missing)
	return missing
}

// requireIdentical checks that every live replica serves the same pushed
// groups, byte for byte (converge first: all at one position).
func requireIdentical(t *testing.T, rs []*replica) {
	t.Helper()
	var first string
	for i, r := range live(rs) {
		text := pushedText(servedBody(t, r.gateway))
		if i == 0 {
			first = text
		} else if text != first {
			t.Errorf("%s's /metrics differs from %s's at the same applied position:\n%s\n---\n%s", r.Addr, live(rs)[0].Addr, clip([]byte(text)), clip([]byte(first)))
		}
	}
}

// servedBody returns g's /metrics body once g serves its store. A replica
// whose term ends rebuilds its store from the log, answering 503 "still
// loading" for the tens of milliseconds that takes, an answer clients are
// told to retry; a leader elected while etcd's quorum was being restored
// can lose its lease right after the replicas converged. Any other answer
// than 200 or that one fails the test at once.
func servedBody(t *testing.T, g *gateway) []byte {
	t.Helper()
	var body []byte
	eventually(t, 10*time.Second, func() error {
		r, err := doRequest(context.Background(), http.MethodGet, g.url("/metrics"), nil)
		if err != nil {
			return err
		}
		if r.Status == http.StatusServiceUnavailable && bytes.Contains(r.Body, []byte("still loading")) {
			return errorf("%s is rebuilding its store: %s", g.url("/metrics"), r)
		}
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s: %s, want 200", g.url("/metrics"), r)
		}
		body = r.Body
		return nil
	})
	return body
}
