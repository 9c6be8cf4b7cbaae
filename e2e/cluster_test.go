package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// clusterLeaseTTL is the replicas' election lease in these tests: a dead
// leader is replaced within it plus 2s.
const clusterLeaseTTL = 3 * time.Second

// TestClusterOnEtcd runs three pushgate replicas on a three-member etcd
// cluster, for etcd 3.7 (built from etcdmain) and Debian's etcd 3.4, and
// drives the cluster as clients do: pushes through any replica, scrapes
// of every replica, conflicting pushes at once, a group too large for etcd,
// a replica cut off from etcd while etcd compacts the history it missed,
// then, under load, a hang of the leader replica, etcd's quorum lost by a
// pause, etcd's leader member and the leader replica killed together and
// restarted, the death of the leader replica and of etcd's leader member,
// and last a Prometheus scraping the replicas through one address while
// one more replica dies. Each fault asserts safety exactly (no push
// acknowledged is lost, the replicas converge) and logs the write
// unavailability it measured, which varies with the machine's load.
func TestClusterOnEtcd(t *testing.T) {
	servers := etcdServers(t)
	for _, version := range []string{"3.7", "3.4"} {
		t.Run("etcd "+version, func(t *testing.T) {
			members := startEtcd(t, servers[version], 3)
			rs := startReplicas(t, members, 3, fmt.Sprintf("--cluster.lease-ttl=%s", clusterLeaseTTL))
			leaderOf(t, rs, waitTimeout)
			t.Run("a push through any replica is read back from it at once and from every replica alike", func(t *testing.T) {
				testReadYourWrites(t, rs)
			})
			t.Run("two conflicting pushes through two replicas at once: exactly one succeeds", func(t *testing.T) {
				testConflictingPushes(t, rs)
			})
			t.Run("a group over etcd's request limit is answered 413 naming the limit", func(t *testing.T) {
				testGroupTooLarge(t, rs)
			})
			t.Run("a replica whose watch fell behind a compaction rebuilds its store and converges", func(t *testing.T) {
				testCompactedWatch(t, members, rs)
			})
			owner := t
			t.Run("the leader replica hangs: writes go on through a new leader, and it serves nothing stale as ready on resuming", func(t *testing.T) {
				testLeaderReplicaHung(t, rs)
			})
			t.Run("etcd's quorum lost by a pause: nothing acknowledged, every replica not ready, then writes go on", func(t *testing.T) {
				testQuorumLostByPause(t, members, rs)
			})
			t.Run("etcd's leader member and the leader replica killed together, then restarted: a conflict is one 200 and one 400", func(t *testing.T) {
				testDoubleKill(t, owner, members, rs)
			})
			t.Run("the leader replica killed under load: none of the acknowledged pushes is lost", func(t *testing.T) {
				testLeaderReplicaKilled(t, rs)
			})
			t.Run("etcd's leader member killed under load: none of the acknowledged pushes is lost", func(t *testing.T) {
				testEtcdLeaderKilled(t, members, rs)
			})
			t.Run("Prometheus scrapes the replicas through one address and keeps the series when a replica dies", func(t *testing.T) {
				testPrometheusThroughOneAddress(t, rs)
			})
		})
	}
}

func testReadYourWrites(t *testing.T, rs []*replica) {
	for i, r := range rs {
		body := fmt.Sprintf("# HELP ryw_value Written through replica %d.\n# TYPE ryw_value gauge\nryw_value{kind=\"x\"} %d\n", i, i)
		pushText(t, r.gateway, http.MethodPut, fmt.Sprintf("/metrics/job/ryw/replica/%d", i), body)
		// No polling: the replica that answered shows the push now.
		scrape(t, r.gateway).requireValue(t, "ryw_value", lbl("job", "ryw", "replica", fmt.Sprint(i), "kind", "x", "instance", ""), float64(i))
	}
	converge(t, rs)
	var first string
	for i, r := range rs {
		text := pushedText(mustStatus(t, http.StatusOK, http.MethodGet, r.url("/metrics"), nil).Body)
		if !strings.Contains(text, "ryw_value") || !strings.Contains(text, "push_time_seconds") {
			t.Fatalf("replica %d serves no pushed group:\n%s", i, text)
		}
		if i == 0 {
			first = text
		} else if text != first {
			t.Errorf("replica %d's /metrics differs from replica 0's at the same applied position:\n%s\n---\n%s", i, text, first)
		}
	}
}

func testConflictingPushes(t *testing.T, rs []*replica) {
	cases := []struct{ pathA, bodyA, pathB, bodyB string }{
		// One metric name, two types.
		{"/metrics/job/clash-a", "# TYPE clash_%d gauge\nclash_%d 1\n", "/metrics/job/clash-b", "# TYPE clash_%d counter\nclash_%d 1\n"},
		// One series from two groups: {job="same",instance="i"}.
		{"/metrics/job/same", "same_%d{instance=\"i\"} 1\n", "/metrics/job/same/instance/i", "same_%d 2\n"},
	}
	for round := range 6 {
		c := cases[round%len(cases)]
		bodyA := strings.ReplaceAll(c.bodyA, "%d", fmt.Sprint(round))
		bodyB := strings.ReplaceAll(c.bodyB, "%d", fmt.Sprint(round))
		a, b := rs[round%len(rs)], rs[(round+1)%len(rs)]
		requireOneOfTwo(t, fmt.Sprintf("round %d", round), a, c.pathA, bodyA, b, c.pathB, bodyB)
	}
}

// requireOneOfTwo sends two conflicting pushes at once, through replicas a
// and b, and requires exactly one 200 and one 400: the leader orders them,
// and whichever comes second conflicts with the first. A 503 (no leader,
// or one handed back from a replica that is not the leader) is an error:
// the forwarding replica waits for a leader within its LeaderWait.
func requireOneOfTwo(t *testing.T, what string, a *replica, pathA, bodyA string, b *replica, pathB, bodyB string) {
	t.Helper()
	var wg sync.WaitGroup
	var ra, rb response
	var ea, eb error
	start := make(chan struct{})
	wg.Go(func() { <-start; ra, ea = doRequest(bgCtx, http.MethodPut, a.url(pathA), []byte(bodyA)) })
	wg.Go(func() { <-start; rb, eb = doRequest(bgCtx, http.MethodPut, b.url(pathB), []byte(bodyB)) })
	close(start)
	wg.Wait()
	if ea != nil || eb != nil {
		t.Fatalf("%s: %v, %v", what, ea, eb)
	}
	ok := 0
	for _, r := range []response{ra, rb} {
		switch r.Status {
		case http.StatusOK:
			ok++
		case http.StatusBadRequest:
			requireOneLine(t, r)
		default:
			t.Errorf("%s: status %s (%s header: %q), want 200 or 400", what, r, notLeaderHeader, r.Header.Values(notLeaderHeader))
		}
	}
	if ok != 1 {
		t.Errorf("%s: %d of the two conflicting pushes succeeded (%s through %s, %s through %s), want exactly one", what, ok, ra, a.Addr, rb, b.Addr)
	}
}

// notLeaderHeader marks a 503 of a replica that did not take a write for
// not leading; a forwarding replica must never hand it to a client.
const notLeaderHeader = "Pushgate-Not-Leader"

func testGroupTooLarge(t *testing.T, rs []*replica) {
	// Random hex label values: s2 cannot shrink them below etcd's 1.5 MiB.
	var b strings.Builder
	buf := make([]byte, 48)
	for i := range 20000 {
		_, _ = rand.Read(buf)
		fmt.Fprintf(&b, "big_value{i=\"%d\",pad=\"%s\"} 1\n", i, hex.EncodeToString(buf))
	}
	for _, r := range rs {
		resp := do(t, http.MethodPut, r.url("/metrics/job/big"), []byte(b.String()))
		if resp.Status != http.StatusRequestEntityTooLarge || !strings.Contains(string(resp.Body), "MiB") && !strings.Contains(string(resp.Body), "bytes") {
			t.Errorf("%s: push of a %d-byte group = %s, want 413 naming the limit", r.Addr, b.Len(), resp)
		}
		requireOneLine(t, resp)
	}
	// The cluster still takes writes.
	pushText(t, rs[0].gateway, http.MethodPut, "/metrics/job/after-big", "after_big 1\n")
}

func testLeaderReplicaKilled(t *testing.T, rs []*replica) {
	var urls []string
	for _, r := range live(rs) {
		urls = append(urls, r.URL)
	}
	l := startLoad(urls, loadOptions{tag: "leader-killed", workers: 4})
	eventually(t, 30*time.Second, func() error {
		if n := l.ackedCount(); n < 50 {
			return errorf("%d pushes acknowledged", n)
		}
		return nil
	})
	leader := leaderOf(t, rs, waitTimeout)
	killedAt := time.Now()
	leader.kill(t)
	l.drop(leader.URL)
	next := leaderOf(t, rs, clusterLeaseTTL+2*time.Second)
	t.Logf("a new leader (%s) %s after the leader replica was killed", next.Addr, time.Since(killedAt).Round(time.Millisecond))
	before := l.ackedCount()
	eventually(t, 30*time.Second, func() error {
		if n := l.ackedCount(); n < before+50 {
			return errorf("%d pushes acknowledged after the new leader, want 50", n-before)
		}
		return nil
	})
	l.finish()
	l.report(t, killedAt)
	converge(t, rs)
	l.requireAcked(t, rs)
}

func testEtcdLeaderKilled(t *testing.T, members []*etcdMember, rs []*replica) {
	var urls []string
	for _, r := range live(rs) {
		urls = append(urls, r.URL)
	}
	l := startLoad(urls, loadOptions{tag: "etcd-leader-killed", workers: 4})
	eventually(t, 30*time.Second, func() error {
		if n := l.ackedCount(); n < 50 {
			return errorf("%d pushes acknowledged", n)
		}
		return nil
	})
	m := etcdLeader(t, members)
	killedAt := time.Now()
	if err := m.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	m.wait(10 * time.Second)
	before := l.ackedCount()
	eventually(t, 60*time.Second, func() error {
		if n := l.ackedCount(); n < before+50 {
			return errorf("%d pushes acknowledged after etcd member %s died, want 50", n-before, m.name)
		}
		return nil
	})
	l.finish()
	l.report(t, killedAt)
	converge(t, rs)
	l.requireAcked(t, rs)
}

// testCompactedWatch starts a fourth replica whose only link to etcd goes
// through a relay, cuts the link, pushes through the others, compacts
// etcd's history past what the cut-off replica applied, and restores the
// link: the replica's watch resumes from a compacted revision, so it must
// rebuild its store from etcd, and then serve what the others serve.
func testCompactedWatch(t *testing.T, members []*etcdMember, rs []*replica) {
	link := startRelay(t, strings.TrimPrefix(members[0].clientURL, "http://"))
	lagging := &replica{gateway: startGateway(t, "--cluster.etcd.endpoints=http://"+link.addr,
		"--web.enable-admin-api", fmt.Sprintf("--cluster.lease-ttl=%s", clusterLeaseTTL))}
	all := append(live(rs), lagging)
	pushText(t, rs[0].gateway, http.MethodPut, "/metrics/job/compaction/instance/before", "compaction_value 1\n")
	converge(t, all)
	rebuilds, err := rebuildCount(lagging)
	if err != nil {
		t.Fatal(err)
	}

	link.cut()
	for i := range 20 {
		r := live(rs)[i%len(live(rs))]
		pushText(t, r.gateway, http.MethodPut, fmt.Sprintf("/metrics/job/compaction/instance/missed-%d", i), fmt.Sprintf("compaction_value %d\n", i))
	}
	rev := compactEtcd(t, members[1])
	t.Logf("etcd compacted up to revision %d while the replica was cut off", rev)
	link.restore()

	eventually(t, 60*time.Second, func() error {
		n, err := rebuildCount(lagging)
		if err == nil && n <= rebuilds {
			err = errorf("the cut-off replica rebuilt its store %v times, as before the compaction", n)
		}
		return err
	})
	// A replica that loaded etcd's state holds the revision it loaded at
	// (later than the last commit when other keys, the election's,
	// changed since), the others the last commit's: one more push puts
	// them all at one position.
	pushText(t, rs[1].gateway, http.MethodPut, "/metrics/job/compaction/instance/after", "compaction_value 100\n")
	pos := converge(t, all)
	want := pushedText(getBody(t, rs[0].gateway))
	if got := pushedText(getBody(t, lagging.gateway)); got != want {
		t.Errorf("at position %d the rebuilt replica serves\n%s\nwhile another serves\n%s", pos, got, want)
	}
	fams := scrape(t, lagging.gateway)
	fams.requireValue(t, "compaction_value", lbl("job", "compaction", "instance", "missed-19"), 19)
	fams.requireValue(t, "compaction_value", lbl("job", "compaction", "instance", "after"), 100)
}

// rebuildCount reads a replica's pushgate_cluster_store_rebuilds_total (an
// error while it is not ready: it serves no /metrics then).
func rebuildCount(r *replica) (float64, error) {
	fams, err := scrapeErr(bgCtx, r.url("/metrics"))
	if err != nil {
		return 0, err
	}
	mf := fams["pushgate_cluster_store_rebuilds_total"]
	if mf == nil || len(mf.GetMetric()) != 1 {
		return 0, errorf("no pushgate_cluster_store_rebuilds_total")
	}
	return sampleValue(mf.GetMetric()[0]), nil
}

// getBody returns the text body of a replica's /metrics.
func getBody(t *testing.T, g *gateway) []byte {
	t.Helper()
	return mustStatus(t, http.StatusOK, http.MethodGet, g.url("/metrics"), nil).Body
}

// compactEtcd compacts etcd's history up to its current revision (through
// member m's JSON gateway, waiting for the compaction to be done) and
// returns that revision.
func compactEtcd(t *testing.T, m *etcdMember) int64 {
	t.Helper()
	r := mustStatus(t, http.StatusOK, http.MethodPost, m.clientURL+"/v3/kv/range", []byte(`{"key":"AA=="}`))
	var status struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	if err := json.Unmarshal(r.Body, &status); err != nil {
		t.Fatalf("etcd range: %v: %s", err, r)
	}
	rev, err := strconv.ParseInt(status.Header.Revision, 10, 64)
	if err != nil {
		t.Fatalf("etcd revision %q: %v", status.Header.Revision, err)
	}
	mustStatus(t, http.StatusOK, http.MethodPost, m.clientURL+"/v3/kv/compaction", fmt.Appendf(nil, `{"revision":"%d","physical":true}`, rev))
	return rev
}

// leaderHang is how long testLeaderReplicaHung freezes the leader replica:
// twice the election lease, so that another replica leads well before the
// frozen one resumes, still believing it leads.
const leaderHang = 6 * time.Second

// testLeaderReplicaHung freezes the leader replica (SIGSTOP) while clients
// push through the other two, retrying 503s. The frozen leader's lease
// expires and another replica leads; the writes forwarded to the frozen
// one go to the new one. When the frozen replica resumes, it holds its
// store of before the freeze and still believes it leads: it must not
// serve that store as current. Whenever it answers /-/ready 200 from then
// on, its /metrics holds every push acknowledged before it resumed; and
// in the end no acknowledged push is lost and the replicas converge.
func testLeaderReplicaHung(t *testing.T, rs []*replica) {
	leader := leaderOf(t, rs, waitTimeout)
	others, urls := othersThan(rs, leader)
	start := time.Now()
	l := startLoad(urls, loadOptions{tag: "leader-hung", workers: 4, retry: true, pace: 10 * time.Millisecond})
	t.Cleanup(l.finish)
	l.waitAcked(t, start, 50, 30*time.Second)

	leader.pause(t)
	frozenAt := time.Now()
	next := leaderOf(t, others, clusterLeaseTTL+5*time.Second)
	t.Logf("leader replica %s frozen; %s leads %s later", leader.Addr, next.Addr, time.Since(frozenAt).Round(time.Millisecond))
	l.waitAcked(t, frozenAt, 50, 30*time.Second)
	time.Sleep(time.Until(frozenAt.Add(leaderHang)))

	// Requests sent while it is frozen wait in its listen backlog and are
	// read the moment it resumes, before it could have confirmed anything:
	// the sharpest test of a replica serving its old store as ready.
	before := l.snapshot()
	var queued sync.WaitGroup
	problems := make(chan string, 100)
	answers := make([]string, 4)
	for i := range answers {
		path := []string{"/-/ready", "/metrics"}[i%2]
		queued.Go(func() {
			ctx, cancel := context.WithTimeout(bgCtx, 10*time.Second)
			defer cancel()
			_, answers[i] = checkResumed(ctx, leader, path, before, problems)
			answers[i] = path + ": " + answers[i]
		})
	}
	time.Sleep(200 * time.Millisecond)
	resumedAt := time.Now()
	leader.resume(t)

	// Then poll it as a load balancer would, until it answered ready (and
	// current) ten times, for 15s at most.
	verified, firstReady, readyThenNot := 0, time.Duration(0), 0
	for verified < 10 && time.Since(resumedAt) < 15*time.Second {
		ctx, cancel := context.WithTimeout(bgCtx, 5*time.Second)
		ok, what := checkResumed(ctx, leader, "/-/ready", before, problems)
		cancel()
		switch {
		case ok && verified == 0:
			firstReady = time.Since(resumedAt)
			fallthrough
		case ok:
			verified++
		case what == readyThenRefused:
			readyThenNot++
		}
		time.Sleep(20 * time.Millisecond)
	}
	queued.Wait()
	close(problems)
	for p := range problems {
		t.Error(p)
	}
	if verified == 0 {
		t.Errorf("the resumed replica %s was not ready and current within 15s", leader.Addr)
	}
	t.Logf("requests sent to the frozen replica were answered on resuming: %s", strings.Join(answers, "; "))
	t.Logf("the resumed replica answered ready (with every push acknowledged before it resumed) %s after SIGCONT; %d times it answered ready and then refused /metrics as not ready",
		firstReady.Round(time.Millisecond), readyThenNot)

	l.finish()
	l.report(t, frozenAt)
	converge(t, rs)
	l.requireAcked(t, rs)
	requireIdentical(t, rs)
}

// readyThenRefused is checkResumed's outcome when r answered /-/ready 200
// and then refused /metrics as not ready.
const readyThenRefused = "ready, then /metrics refused as not ready"

// checkResumed asks r for path (/-/ready or /metrics) and, when it
// answers ready, checks that its /metrics holds every push in acked,
// sending what it found wrong to problems. It reports whether r answered
// ready and current, and what it answered. A ready answer followed by
// /metrics refused as not ready (r noticed only then that it must confirm
// afresh, or its term ended meanwhile) is not an error: the answer served
// nothing stale.
func checkResumed(ctx context.Context, r *replica, path string, acked map[string]int, problems chan<- string) (bool, string) {
	resp, err := doRequest(ctx, http.MethodGet, r.url(path), nil)
	if err != nil {
		return false, err.Error()
	}
	if resp.Status != http.StatusOK {
		return false, fmt.Sprint(resp.Status)
	}
	if path == "/-/ready" {
		if resp, err = doRequest(ctx, http.MethodGet, r.url("/metrics"), nil); err != nil {
			return false, "ready, then /metrics: " + err.Error()
		}
		if resp.Status != http.StatusOK {
			return false, readyThenRefused
		}
	}
	fams, err := parseText(resp.Body)
	if err != nil {
		problems <- fmt.Sprintf("%s: /metrics: %v", r.Addr, err)
		return false, "unparsable /metrics"
	}
	if missing := missingAcked(fams, acked); len(missing) > 0 {
		select {
		case problems <- fmt.Sprintf("%s answered %s as ready, its /metrics lacking %d of the %d pushes acknowledged before it resumed (e.g. %v)",
			r.Addr, path, len(missing), len(acked), missing[:min(len(missing), 5)]):
		default:
		}
		return false, "STALE"
	}
	return true, "200, current"
}

// testDoubleKill kills etcd's leader member and the leader replica at once
// (SIGKILL) while clients push through the other replicas, then restarts
// both where they were: etcd's member with its data, the replica at the
// dead leader's address, which the others may still take for the leader's
// for a moment. Right away, two conflicting pushes (one metric name, two
// types) through two replicas must get one 200 and one 400, never a 503
// handed back from a replica that is not the leader; and no acknowledged
// push is lost.
func testDoubleKill(t, owner *testing.T, members []*etcdMember, rs []*replica) {
	leader := leaderOf(t, rs, waitTimeout)
	m := etcdLeader(t, members)
	others, urls := othersThan(rs, leader)
	start := time.Now()
	l := startLoad(urls, loadOptions{tag: "double-kill", workers: 4, retry: true, pace: 10 * time.Millisecond})
	t.Cleanup(l.finish)
	l.waitAcked(t, start, 50, 30*time.Second)

	// Both signals first, then the waits: the two die together.
	killedAt := time.Now()
	if err := m.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := leader.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	m.wait(10 * time.Second)
	leader.wait(10 * time.Second)
	leader.killed = true
	next := leaderOf(t, others, 30*time.Second)
	t.Logf("etcd member %s and leader replica %s killed; %s leads %s later", m.name, leader.Addr, next.Addr, time.Since(killedAt).Round(time.Millisecond))
	first := l.waitAcked(t, killedAt, 50, 30*time.Second)
	t.Logf("the first push acknowledged %s after the kill", first.Round(time.Millisecond))

	for i := range members {
		if members[i] == m {
			members[i] = restartEtcdMember(t, owner, m)
		}
	}
	for i := range rs {
		if rs[i] == leader {
			rs[i] = restartReplica(t, owner, leader)
		}
	}
	restartedAt := time.Now()
	t.Logf("etcd member %s and replica %s restarted %s after the kill", m.name, leader.Addr, restartedAt.Sub(killedAt).Round(time.Millisecond))
	// Every ordered pair of replicas, the restarted one in four of them.
	round := 0
	for i := range rs {
		for j := range rs {
			if i == j {
				continue
			}
			name := fmt.Sprintf("double_kill_clash_%d", round)
			requireOneOfTwo(t, fmt.Sprintf("round %d (%s, %s)", round, rs[i].Addr, rs[j].Addr),
				rs[i], "/metrics/job/double-kill-clash-a", fmt.Sprintf("# TYPE %s gauge\n%s 1\n", name, name),
				rs[j], "/metrics/job/double-kill-clash-b", fmt.Sprintf("# TYPE %s counter\n%s 1\n", name, name))
			round++
		}
	}
	t.Logf("%d rounds of conflicting pushes answered within %s of the restart", round, time.Since(restartedAt).Round(time.Millisecond))

	l.finish()
	l.report(t, killedAt)
	converge(t, rs)
	l.requireAcked(t, rs)
	requireIdentical(t, rs)
}

// quorumPause is how long testQuorumLostByPause keeps two of the three
// etcd members stopped: longer than a replica may go unconfirmed (2s)
// before it is not ready.
const quorumPause = 4 * time.Second

// notReadyWithin bounds how long a replica answers ready once etcd's
// quorum is lost: it confirms it is current every 500ms, and is not ready
// once it could not for 2s; the rest is slack for a loaded machine.
const notReadyWithin = 3 * time.Second

// testQuorumLostByPause stops two of the three etcd members (SIGSTOP:
// etcd's leader and another) while clients push through every replica,
// retrying 503s. No push sent once both are stopped may be acknowledged
// before they resume, every replica goes not ready within the time a
// replica may go unconfirmed, and stays not ready while the quorum is
// lost; once they resume, writes go on, the replicas become ready again
// and converge, and no acknowledged push is lost.
func testQuorumLostByPause(t *testing.T, members []*etcdMember, rs []*replica) {
	var urls []string
	for _, r := range live(rs) {
		urls = append(urls, r.URL)
	}
	start := time.Now()
	l := startLoad(urls, loadOptions{tag: "quorum-lost", workers: 4, retry: true, pace: 10 * time.Millisecond})
	t.Cleanup(l.finish)
	l.waitAcked(t, start, 50, 30*time.Second)

	stopped := []*etcdMember{etcdLeader(t, members)}
	for _, m := range members {
		if m != stopped[0] && len(stopped) < 2 {
			stopped = append(stopped, m)
		}
	}
	for _, m := range stopped {
		m.pause(t)
	}
	stoppedAt := time.Now()

	notReady := map[*replica]time.Duration{}
	for time.Since(stoppedAt) < quorumPause {
		for _, r := range live(rs) {
			ctx, cancel := context.WithTimeout(bgCtx, 2*time.Second)
			resp, err := doRequest(ctx, http.MethodGet, r.url("/-/ready"), nil)
			cancel()
			_, was := notReady[r]
			switch {
			case err != nil:
				t.Errorf("%s's /-/ready did not answer while etcd's quorum was lost: %v", r.Addr, err)
			case resp.Status == http.StatusServiceUnavailable && !was:
				notReady[r] = time.Since(stoppedAt)
			case resp.Status == http.StatusOK && was:
				t.Errorf("%s answered ready %s after etcd's quorum was lost, after it had answered not ready", r.Addr, time.Since(stoppedAt).Round(time.Millisecond))
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	resumedAt := time.Now()
	for _, m := range stopped {
		m.resume(t)
	}
	for _, r := range live(rs) {
		d, ok := notReady[r]
		switch {
		case !ok:
			t.Errorf("%s stayed ready for the %s etcd's quorum was lost", r.Addr, quorumPause)
		case d > notReadyWithin:
			t.Errorf("%s answered ready for %s after etcd's quorum was lost, want not ready within %s", r.Addr, d.Round(time.Millisecond), notReadyWithin)
		default:
			t.Logf("%s not ready %s after etcd members %s and %s stopped", r.Addr, d.Round(time.Millisecond), stopped[0].name, stopped[1].name)
		}
	}

	first := l.waitAcked(t, resumedAt, 50, 30*time.Second)
	eventually(t, 30*time.Second, func() error {
		for _, r := range live(rs) {
			if _, ready, _, err := clusterGauges(r.gateway); err != nil || !ready {
				return errorf("%s not ready (%v)", r.Addr, err)
			}
		}
		return nil
	})
	t.Logf("after the members resumed: the first push acknowledged %s later, every replica seen ready by %s later",
		first.Round(time.Millisecond), time.Since(resumedAt).Round(time.Millisecond))
	l.finish()
	l.report(t, stoppedAt)
	l.mu.Lock()
	for _, a := range l.acks {
		if a.sent.After(stoppedAt) && a.answered.Before(resumedAt) {
			t.Errorf("a push sent %s after etcd's quorum was lost was acknowledged %s after, before the members resumed",
				a.sent.Sub(stoppedAt).Round(time.Millisecond), a.answered.Sub(stoppedAt).Round(time.Millisecond))
		}
	}
	l.mu.Unlock()
	converge(t, rs)
	l.requireAcked(t, rs)
	requireIdentical(t, rs)
}
