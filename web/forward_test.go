package web

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/store"
)

// fakeCluster is a replica's view of the cluster for the forwarding tests.
type fakeCluster struct {
	mu      sync.Mutex
	leading bool
	leaders []string // Leader answers these in turn, then the last one
	waited  []uint64 // positions WaitApplied was asked for
	gone    []string // the URLs LeaderGone was called with
	// onGone, when set, runs in LeaderGone with c.mu held.
	onGone func(c *fakeCluster, url string)
}

func (c *fakeCluster) BeginWrite() (func(), bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return func() {}, c.leading
}

func (c *fakeCluster) Leader(context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.leaders) == 0 {
		return "", nil
	}
	l := c.leaders[0]
	if len(c.leaders) > 1 {
		c.leaders = c.leaders[1:]
	}
	return l, nil
}

func (c *fakeCluster) ForgetLeader(string) {}

func (c *fakeCluster) LeaderGone(_ context.Context, url string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gone = append(c.gone, url)
	if c.onGone != nil {
		c.onGone(c, url)
	}
}

// seqLog is a journal.Log whose batches commit at once, at positions
// counting up from next.
type seqLog struct {
	mu   sync.Mutex
	next journal.Position
}

func (l *seqLog) Append(...journal.Op) (journal.Commit, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := seqCommit(l.next)
	l.next++
	return c, nil
}

// seqCommit is a batch of seqLog, committed at its position.
type seqCommit journal.Position

func (seqCommit) Wait(context.Context) error   { return nil }
func (c seqCommit) Position() journal.Position { return journal.Position(c) }

func (c *fakeCluster) WaitApplied(_ context.Context, pos uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waited = append(c.waited, pos)
	return nil
}

// seenRequest is what the leader received.
type seenRequest struct {
	method, uri, body, auth, encoding, forwardedBy string
}

// startLeader serves a leader replica: a handler taking writes whose first
// commit is at position 42, recording what it receives.
func startLeader(t *testing.T, opts Options) (*httptest.Server, *fakeCluster, <-chan seenRequest) {
	t.Helper()
	h, st := newTestHandler(t, opts)
	st.SetJournal(&seqLog{next: 42})
	c := &fakeCluster{leading: true}
	fwd := h.Forward(c, ForwardOptions{Self: "http://leader"})
	seen := make(chan seenRequest, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen <- seenRequest{r.Method, r.RequestURI, string(b), r.Header.Get("Authorization"), r.Header.Get("Content-Encoding"), r.Header.Get(ForwardedByHeader)}
		r.Body = io.NopCloser(bytes.NewReader(b))
		fwd.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, c, seen
}

func TestAFollowerForwardsAWriteAndAnswersOnceItAppliedTheLeadersCommit(t *testing.T) {
	leader, _, seen := startLeader(t, Options{})
	h, st := newTestHandler(t, Options{})
	c := &fakeCluster{leaders: []string{leader.URL}}
	fwd := h.Forward(c, ForwardOptions{Self: "http://follower"})

	target := "/metrics/job/j/path/a%2Fb?x=1"
	w := do(t, fwd, http.MethodPut, target, []byte("g 1\n"), map[string]string{"Authorization": "Basic dTpw"})
	if w.Code != http.StatusOK || w.Header().Get(CommitPositionHeader) != "42" {
		t.Fatalf("forwarded push = %d %q, position %q; want the leader's 200 at position 42", w.Code, w.Body, w.Header().Get(CommitPositionHeader))
	}
	got := <-seen
	want := seenRequest{http.MethodPut, target, "g 1\n", "Basic dTpw", "", "http://follower"}
	if got != want {
		t.Errorf("the leader received %+v, want %+v", got, want)
	}
	if len(c.waited) != 1 || c.waited[0] != 42 {
		t.Errorf("the follower waited for positions %v, want [42]", c.waited)
	}
	if st.Stats().Groups != 0 {
		t.Error("the follower's own store took the forwarded write")
	}

	// A rejection comes back as the leader worded it.
	w = do(t, fwd, http.MethodPut, "/metrics/job/j", []byte("g{a=\"1\"} 1 1000\n"), nil)
	<-seen
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "timestamp") {
		t.Errorf("forwarded bad push = %d %q, want the leader's 400", w.Code, w.Body)
	}
}

func TestOnlyWritesAreForwarded(t *testing.T) {
	leader, _, seen := startLeader(t, Options{EnableAdminAPI: true})
	h, _ := newTestHandler(t, Options{EnableAdminAPI: true})
	fwd := h.Forward(&fakeCluster{leaders: []string{leader.URL}}, ForwardOptions{})
	for _, tc := range []struct {
		method, target string
		forwarded      bool
	}{
		{http.MethodPut, "/metrics/job/j", true},
		{http.MethodPost, "/metrics/job/j", true},
		{http.MethodDelete, "/metrics/job/j", true},
		{http.MethodPut, "/api/v1/admin/wipe", true},
		{http.MethodDelete, "/api/v1/admin/groups?match[]=job%3D%22j%22", true},
		{http.MethodGet, "/metrics", false},
		{http.MethodGet, "/api/v1/metrics", false},
		{http.MethodGet, "/api/v1/admin/groups", false},
		{http.MethodGet, "/-/ready", false},
		{http.MethodGet, "/metrics/job/j", false},
	} {
		do(t, fwd, tc.method, tc.target, nil, nil)
		select {
		case <-seen:
			if !tc.forwarded {
				t.Errorf("%s %s was forwarded", tc.method, tc.target)
			}
		default:
			if tc.forwarded {
				t.Errorf("%s %s was not forwarded", tc.method, tc.target)
			}
		}
	}
}

func TestTheLeaderTakesAWriteItselfAndNamesItsCommitPosition(t *testing.T) {
	h, st := newTestHandler(t, Options{})
	st.SetJournal(&seqLog{next: 7})
	fwd := h.Forward(&fakeCluster{leading: true}, ForwardOptions{})
	w := do(t, fwd, http.MethodPut, "/metrics/job/j", []byte("g 1\n"), nil)
	if w.Code != http.StatusOK || w.Header().Get(CommitPositionHeader) != "7" || st.Stats().Groups != 1 {
		t.Fatalf("push on the leader = %d, position %q, %d groups; want 200 at 7, stored", w.Code, w.Header().Get(CommitPositionHeader), st.Stats().Groups)
	}
}

func TestAForwardedWriteReachingAReplicaThatDoesNotLeadIsRefused(t *testing.T) {
	leader, _, seen := startLeader(t, Options{})
	h, _ := newTestHandler(t, Options{})
	fwd := h.Forward(&fakeCluster{leaders: []string{leader.URL}}, ForwardOptions{LeaderWait: time.Minute})
	w := do(t, fwd, http.MethodPut, "/metrics/job/j", []byte("g 1\n"), map[string]string{ForwardedByHeader: "http://elsewhere"})
	// Marked, so that the forwarding replica looks for the leader again.
	if w.Code != http.StatusServiceUnavailable || w.Header().Get(NotLeaderHeader) != leader.URL || w.Header().Get("Retry-After") == "" {
		t.Errorf("a forwarded write on a non-leader = %d %q, %s %q, Retry-After %q; want 503 naming %s, with Retry-After",
			w.Code, w.Body, NotLeaderHeader, w.Header().Get(NotLeaderHeader), w.Header().Get("Retry-After"), leader.URL)
	}
	select {
	case <-seen:
		t.Error("a forwarded write was forwarded again")
	default:
	}
}

func TestAForwardedWriteReachingTheElectedLeaderWaitsUntilItTakesWrites(t *testing.T) {
	h, st := newTestHandler(t, Options{})
	c := &fakeCluster{} // elected (Leader says ""), not taking writes yet
	fwd := h.Forward(c, ForwardOptions{LeaderWait: time.Minute})
	done := make(chan int, 1)
	go func() {
		done <- do(t, fwd, http.MethodPut, "/metrics/job/j", []byte("g 1\n"), map[string]string{ForwardedByHeader: "http://follower"}).Code
	}()
	c.mu.Lock()
	c.leading = true
	c.mu.Unlock()
	if code := <-done; code != http.StatusOK || st.Stats().Groups != 1 {
		t.Errorf("forwarded push = %d with %d groups stored; want 200 once the leader takes writes", code, st.Stats().Groups)
	}
}

func TestAWriteWithoutALeaderAnswers503OnceTheWaitIsOver(t *testing.T) {
	h, st := newTestHandler(t, Options{})
	fwd := h.Forward(&fakeCluster{}, ForwardOptions{LeaderWait: 120 * time.Millisecond})
	w := do(t, fwd, http.MethodPut, "/metrics/job/j", []byte("g 1\n"), nil)
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "no cluster leader") {
		t.Errorf("push without a leader = %d %q, want 503 with the reason", w.Code, w.Body)
	}
	if st.Stats().Groups != 0 {
		t.Error("a replica without a leader stored the push")
	}
}

func TestAWriteGoesToTheNextLeaderWhenTheFirstCannotBeReached(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	leader, _, seen := startLeader(t, Options{})
	h, _ := newTestHandler(t, Options{})
	fwd := h.Forward(&fakeCluster{leaders: []string{gone.URL, leader.URL}}, ForwardOptions{})
	w := do(t, fwd, http.MethodPut, "/metrics/job/j", []byte("g 1\n"), nil)
	if w.Code != http.StatusOK {
		t.Fatalf("push = %d %q, want 200 from the reachable leader", w.Code, w.Body)
	}
	if got := <-seen; got.body != "g 1\n" {
		t.Errorf("the second leader received body %q", got.body)
	}
}

func TestAReplicaStillLoadingForwardsNothing(t *testing.T) {
	leader, _, seen := startLeader(t, Options{})
	h, _ := newTestHandler(t, Options{Ready: func() bool { return false }})
	fwd := h.Forward(&fakeCluster{leaders: []string{leader.URL}}, ForwardOptions{})
	if w := do(t, fwd, http.MethodPut, "/metrics/job/j", []byte("g 1\n"), nil); w.Code != http.StatusServiceUnavailable {
		t.Errorf("push while loading = %d, want 503", w.Code)
	}
	select {
	case <-seen:
		t.Error("a replica still loading forwarded a write")
	default:
	}
}

func TestAWriteGoesToTheNextLeaderWhenTheFirstDiesWhileReceivingIt(t *testing.T) {
	// The first leader reads the request, body and all, then dies without
	// answering, as a killed leader replica does.
	dying := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(dying.Close)
	leader, _, seen := startLeader(t, Options{})
	h, _ := newTestHandler(t, Options{})
	fwd := h.Forward(&fakeCluster{leaders: []string{dying.URL, leader.URL}}, ForwardOptions{})
	w := do(t, fwd, http.MethodPut, "/metrics/job/j", []byte("g 1\n"), nil)
	if w.Code != http.StatusOK {
		t.Fatalf("push = %d %q, want 200 from the next leader", w.Code, w.Body)
	}
	if got := <-seen; got.body != "g 1\n" {
		t.Errorf("the next leader received body %q", got.body)
	}
}

func TestAWriteHeldForAForwardIsTakenHereWhenThisReplicaComesToLead(t *testing.T) {
	c := &fakeCluster{}
	// The leader dies while receiving the write, and this replica wins
	// the next election.
	dying := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		c.mu.Lock()
		c.leading = true
		c.mu.Unlock()
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(dying.Close)
	c.leaders = []string{dying.URL}
	h, st := newTestHandler(t, Options{})
	fwd := h.Forward(c, ForwardOptions{})
	w := do(t, fwd, http.MethodPut, "/metrics/job/j", []byte("g 1\n"), nil)
	if w.Code != http.StatusOK {
		t.Fatalf("push = %d %q, want 200 from this replica", w.Code, w.Body)
	}
	if body := scrapeText(t, h); !strings.Contains(body, `g{instance="",job="j"} 1`) {
		t.Errorf("this replica took the write without its body:\n%s", body)
	}
	if st.Stats().Groups != 1 {
		t.Errorf("groups = %d, want 1", st.Stats().Groups)
	}
}

// staleCluster names a stale leader until a forwarder tells it to forget
// that one, as package cluster's Replica names a cached one.
type staleCluster struct {
	fakeCluster
	stale, fresh string
	forgot       []string // the URLs ForgetLeader was called with
}

func (c *staleCluster) Leader(context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, url := range c.forgot {
		if url == c.stale {
			return c.fresh, nil
		}
	}
	return c.stale, nil
}

func (c *staleCluster) ForgetLeader(url string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgot = append(c.forgot, url)
}

// startFollower serves a replica that does not lead and names leader as the
// one that does.
func startFollower(t *testing.T, leader string) *httptest.Server {
	t.Helper()
	h, _ := newTestHandler(t, Options{})
	srv := httptest.NewServer(h.Forward(&fakeCluster{leaders: []string{leader}}, ForwardOptions{Self: "http://stale"}))
	t.Cleanup(srv.Close)
	return srv
}

func TestAWriteRefusedAsNotTheLeaderGoesToTheLeaderLookedUpAgain(t *testing.T) {
	leader, _, seen := startLeader(t, Options{})
	// The replica at the cached leader's address does not lead now: it
	// refuses the forwarded write, naming the leader.
	stale := startFollower(t, leader.URL)
	h, _ := newTestHandler(t, Options{})
	c := &staleCluster{stale: stale.URL, fresh: leader.URL}
	fwd := h.Forward(c, ForwardOptions{Self: "http://follower", LeaderWait: time.Minute})
	w := do(t, fwd, http.MethodPut, "/metrics/job/j", []byte("g 1\n"), nil)
	if w.Code != http.StatusOK || w.Header().Get(CommitPositionHeader) != "42" {
		t.Fatalf("push = %d %q, want the leader's 200, not the stale one's refusal", w.Code, w.Body)
	}
	if _, ok := w.Header()[NotLeaderHeader]; ok {
		t.Errorf("the answer carries %s", NotLeaderHeader)
	}
	if got := <-seen; got.body != "g 1\n" {
		t.Errorf("the leader received body %q", got.body)
	}
	if len(c.forgot) != 1 || c.forgot[0] != stale.URL {
		t.Errorf("ForgetLeader was called with %q, want the refusing replica %q", c.forgot, stale.URL)
	}
}

func TestAForwardedWriteFindingNoLeaderIsRefusedAsNotLeader(t *testing.T) {
	h, _ := newTestHandler(t, Options{})
	fwd := h.Forward(&fakeCluster{}, ForwardOptions{LeaderWait: 120 * time.Millisecond})
	w := do(t, fwd, http.MethodPut, "/metrics/job/j", []byte("g 1\n"), map[string]string{ForwardedByHeader: "http://elsewhere"})
	if _, ok := w.Header()[NotLeaderHeader]; w.Code != http.StatusServiceUnavailable || !ok {
		t.Errorf("forwarded write without a leader = %d %q, %s present: %v; want 503 marked", w.Code, w.Body, NotLeaderHeader, ok)
	}
	// The client of a replica that forwards nothing gets Retry-After, and
	// no mark meant for replicas.
	w = do(t, fwd, http.MethodPut, "/metrics/job/j", []byte("g 1\n"), nil)
	if _, ok := w.Header()[NotLeaderHeader]; w.Code != http.StatusServiceUnavailable || ok || w.Header().Get("Retry-After") == "" {
		t.Errorf("write without a leader = %d %q, %s present: %v, Retry-After %q; want 503 unmarked with Retry-After",
			w.Code, w.Body, NotLeaderHeader, ok, w.Header().Get("Retry-After"))
	}
}

// failingLog fails every commit with err, as the etcd backend does when
// the term ends (journal.ErrNotLeader) or a commit's outcome is unknown
// (journal.ErrAmbiguous).
type failingLog struct{ err error }

func (l failingLog) Append(...journal.Op) (journal.Commit, error) { return failedCommit(l), nil }

type failedCommit struct{ err error }

func (c failedCommit) Wait(context.Context) error { return c.err }
func (failedCommit) Position() journal.Position   { return 0 }

// startFailingLeader serves a leader replica whose commits fail with err,
// counting the writes it receives.
func startFailingLeader(t *testing.T, err error) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	st := store.New(store.Options{})
	st.SetJournal(failingLog{err})
	h, nerr := New(st, prometheus.NewRegistry(), Options{})
	if nerr != nil {
		t.Fatal(nerr)
	}
	fwd := h.Forward(&fakeCluster{leading: true}, ForwardOptions{})
	var received atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		fwd.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &received
}

func TestAWriteRefusedByALeaderWhoseTermEndedGoesToTheNextLeader(t *testing.T) {
	deposed, _ := startFailingLeader(t, fmt.Errorf("commit 1 groups: deposed: %w", journal.ErrNotLeader))
	leader, _, seen := startLeader(t, Options{})
	h, _ := newTestHandler(t, Options{})
	c := &staleCluster{stale: deposed.URL, fresh: leader.URL}
	fwd := h.Forward(c, ForwardOptions{LeaderWait: time.Minute})
	w := do(t, fwd, http.MethodPut, "/metrics/job/j", []byte("g 1\n"), nil)
	if w.Code != http.StatusOK {
		t.Fatalf("push = %d %q, want 200 from the next leader", w.Code, w.Body)
	}
	if got := <-seen; got.body != "g 1\n" {
		t.Errorf("the next leader received body %q", got.body)
	}
}

func TestAnAmbiguousCommitIsPassedBackAndNotSentAgain(t *testing.T) {
	doubtful, received := startFailingLeader(t, fmt.Errorf("commit 1 groups: %w", journal.ErrAmbiguous))
	leader, _, seen := startLeader(t, Options{})
	h, _ := newTestHandler(t, Options{})
	c := &staleCluster{stale: doubtful.URL, fresh: leader.URL}
	fwd := h.Forward(c, ForwardOptions{LeaderWait: time.Minute})
	w := do(t, fwd, http.MethodPut, "/metrics/job/j", []byte("g 1\n"), nil)
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "commit outcome unknown") {
		t.Errorf("push = %d %q, want the leader's 503 saying the outcome is unknown", w.Code, w.Body)
	}
	if n := received.Load(); n != 1 {
		t.Errorf("the leader received the write %d times, want 1", n)
	}
	select {
	case <-seen:
		t.Error("a write of unknown outcome was sent to another leader")
	default:
	}
}

// startHungLeader serves a leader replica that takes a request, body and
// all, and then hangs (as one stopped by SIGSTOP) until the forwarder gives
// the attempt up or the test ends. received gets every request it takes.
func startHungLeader(t *testing.T) (srv *httptest.Server, received <-chan struct{}, gaveUp <-chan struct{}) {
	t.Helper()
	rec := make(chan struct{}, 10)
	up := make(chan struct{}, 10)
	release := make(chan struct{})
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		rec <- struct{}{}
		select {
		case <-r.Context().Done():
			up <- struct{}{}
		case <-release:
		}
		http.Error(w, "the hung leader's late answer", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	return srv, rec, up
}

// serveInBackground sends a push through h and returns its answer once
// there is one.
func serveInBackground(t *testing.T, h http.Handler, body string) <-chan *httptest.ResponseRecorder {
	t.Helper()
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		r := httptest.NewRequest(http.MethodPut, "/metrics/job/j", strings.NewReader(body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		done <- w
	}()
	return done
}

// awaitAnswer returns the write's answer; a write still held by a hung
// leader long after the test's other events fails the test rather than
// hang it.
func awaitAnswer(t *testing.T, done <-chan *httptest.ResponseRecorder) *httptest.ResponseRecorder {
	t.Helper()
	select {
	case w := <-done:
		return w
	case <-time.After(30 * time.Second):
		t.Fatal("the write is still held by the hung leader")
		return nil
	}
}

func (c *fakeCluster) setLeader(url string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leaders = []string{url}
}

func TestAWriteHeldByAHungLeaderGoesToTheNextLeader(t *testing.T) {
	hung, received, gaveUp := startHungLeader(t)
	leader, _, seen := startLeader(t, Options{})
	h, _ := newTestHandler(t, Options{})
	c := &fakeCluster{leaders: []string{hung.URL}}
	fwd := h.Forward(c, ForwardOptions{LeaderWait: time.Minute})
	done := serveInBackground(t, fwd, "g 1\n")
	<-received
	// The hung leader's term ends; another replica is elected.
	c.setLeader(leader.URL)
	w := awaitAnswer(t, done)
	if w.Code != http.StatusOK || w.Header().Get(CommitPositionHeader) != "42" {
		t.Fatalf("push = %d %q, want the next leader's 200", w.Code, w.Body)
	}
	if got := <-seen; got.body != "g 1\n" {
		t.Errorf("the next leader received body %q", got.body)
	}
	<-gaveUp // the attempt on the hung leader was given up, not left open
}

func TestAWriteHeldByAHungLeaderIsTakenHereWhenThisReplicaComesToLead(t *testing.T) {
	hung, received, _ := startHungLeader(t)
	h, st := newTestHandler(t, Options{})
	c := &fakeCluster{leaders: []string{hung.URL}}
	fwd := h.Forward(c, ForwardOptions{LeaderWait: time.Minute})
	done := serveInBackground(t, fwd, "g 1\n")
	<-received
	c.mu.Lock()
	c.leading = true
	c.mu.Unlock()
	w := awaitAnswer(t, done)
	if w.Code != http.StatusOK || st.Stats().Groups != 1 {
		t.Fatalf("push = %d %q with %d groups stored, want 200 from this replica", w.Code, w.Body, st.Stats().Groups)
	}
	if body := scrapeText(t, h); !strings.Contains(body, `g{instance="",job="j"} 1`) {
		t.Errorf("this replica took the write without its body:\n%s", body)
	}
}

func TestAWriteHeldByAHungLeaderIsAnswered503OnceTheWaitIsOver(t *testing.T) {
	hung, _, gaveUp := startHungLeader(t)
	h, _ := newTestHandler(t, Options{})
	fwd := h.Forward(&fakeCluster{leaders: []string{hung.URL}}, ForwardOptions{LeaderWait: 300 * time.Millisecond})
	w := awaitAnswer(t, serveInBackground(t, fwd, "g 1\n"))
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "may or may not have been applied") {
		t.Errorf("push = %d %q, Retry-After %q; want 503 saying the outcome is unknown, with Retry-After", w.Code, w.Body, w.Header().Get("Retry-After"))
	}
	<-gaveUp
}

// TestAWriteToALeaderWhoseAddressRefusesConnectionsEndsItsTerm: the
// leader's process is gone (nothing listens at its address), so the
// forwarder tells the cluster, which may end that term at once, and sends
// the write to the next leader. Before, it waited for the dead leader's
// lease to expire.
func TestAWriteToALeaderWhoseAddressRefusesConnectionsEndsItsTerm(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // the address now refuses connections
	next, _, seen := startLeader(t, Options{})
	h, _ := newTestHandler(t, Options{})
	c := &fakeCluster{leaders: []string{deadURL}}
	c.onGone = func(c *fakeCluster, url string) {
		if url == deadURL {
			c.leaders = []string{next.URL}
		}
	}
	fwd := h.Forward(c, ForwardOptions{Self: "http://follower", LeaderWait: time.Minute})
	w := do(t, fwd, http.MethodPut, "/metrics/job/j", []byte("g 1\n"), nil)
	if w.Code != http.StatusOK {
		t.Fatalf("push = %d %q, want the next leader's 200", w.Code, w.Body)
	}
	<-seen
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.gone) == 0 || c.gone[0] != deadURL {
		t.Errorf("LeaderGone was called with %v, want the dead leader %s", c.gone, deadURL)
	}
}

// deposedCluster leads for its first write only: its term ends while
// that write waits for the log, and the leader it names next is fresh.
type deposedCluster struct {
	fakeCluster
	fresh  string
	begun  int
	forgot []string
}

func (c *deposedCluster) BeginWrite() (func(), bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.begun++
	return func() {}, c.begun == 1
}

func (c *deposedCluster) Leader(context.Context) (string, error) { return c.fresh, nil }

func TestAClientsWriteToALeaderWhoseTermEndsMidWriteGoesToTheNextLeader(t *testing.T) {
	leader, _, seen := startLeader(t, Options{})
	st := store.New(store.Options{})
	st.SetJournal(failingLog{fmt.Errorf("commit 1 groups: deposed: %w", journal.ErrNotLeader)})
	h, err := New(st, prometheus.NewRegistry(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &deposedCluster{fresh: leader.URL}
	fwd := h.Forward(c, ForwardOptions{Self: "http://deposed", LeaderWait: time.Minute})
	w := do(t, fwd, http.MethodPut, "/metrics/job/j", []byte("g 1\n"), nil)
	if w.Code != http.StatusOK || w.Header().Get(CommitPositionHeader) != "42" {
		t.Fatalf("push = %d %q, want the next leader's 200, not this replica's not-leader refusal", w.Code, w.Body)
	}
	if _, ok := w.Header()[NotLeaderHeader]; ok {
		t.Errorf("the client's answer carries %s", NotLeaderHeader)
	}
	if got := <-seen; got.body != "g 1\n" || got.forwardedBy != "http://deposed" {
		t.Errorf("the next leader received body %q forwarded by %q", got.body, got.forwardedBy)
	}
}

func TestAClientsWriteToALeaderWhoseTermEndsIsAnswered503OnceTheWaitIsOver(t *testing.T) {
	st := store.New(store.Options{})
	st.SetJournal(failingLog{fmt.Errorf("commit 1 groups: deposed: %w", journal.ErrNotLeader)})
	h, err := New(st, prometheus.NewRegistry(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// It keeps leading and failing: the refusal goes to the client once
	// the wait is over, with its reason.
	fwd := h.Forward(&fakeCluster{leading: true}, ForwardOptions{LeaderWait: 200 * time.Millisecond})
	w := do(t, fwd, http.MethodPut, "/metrics/job/j", []byte("g 1\n"), nil)
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "deposed") {
		t.Errorf("push = %d %q, want 503 naming the term's end", w.Code, w.Body)
	}
}

func TestAClientsWriteTheLeaderTakesIsAnsweredAsItsHandlerWrote(t *testing.T) {
	h, st := newTestHandler(t, Options{})
	st.SetJournal(&seqLog{next: 7})
	fwd := h.Forward(&fakeCluster{leading: true}, ForwardOptions{})
	w := do(t, fwd, http.MethodPut, "/metrics/job/j", []byte("g{ 1\n"), nil)
	if w.Code != http.StatusBadRequest || w.Header().Get("Content-Type") == "" {
		t.Errorf("bad push = %d %q (Content-Type %q), want the handler's 400", w.Code, w.Body, w.Header().Get("Content-Type"))
	}
	w = do(t, fwd, http.MethodPut, "/metrics/job/j", []byte("g 1\n"), nil)
	if w.Code != http.StatusOK || w.Header().Get(CommitPositionHeader) != "7" {
		t.Errorf("push = %d %q position %q, want 200 at 7", w.Code, w.Body, w.Header().Get(CommitPositionHeader))
	}
}

func TestTheLeaderReadsEveryWriteItTakesWhole(t *testing.T) {
	h, st := newTestHandler(t, Options{})
	st.SetJournal(&seqLog{next: 7})
	fwd := h.Forward(&fakeCluster{leading: true}, ForwardOptions{})
	// Each body is read into the buffer the last one was read into.
	for _, body := range []string{"g 1\nh_with_a_longer_name 2\n", "g 22\n", "g 333\nh 4\n"} {
		if w := do(t, fwd, http.MethodPut, "/metrics/job/j", []byte(body), nil); w.Code != http.StatusOK {
			t.Fatalf("push of %q = %d %q", body, w.Code, w.Body)
		}
		got := do(t, h, http.MethodGet, "/metrics", nil, nil).Body.String()
		for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
			if !strings.Contains(got, "\n"+line[:strings.IndexByte(line, ' ')]+"{") || !strings.Contains(got, "} "+line[strings.IndexByte(line, ' ')+1:]+"\n") {
				t.Errorf("after pushing %q, the scrape lacks %q:\n%s", body, line, got)
			}
		}
		if body == "g 22\n" && strings.Contains(got, "h_with_a_longer_name") {
			t.Errorf("after pushing %q, the scrape still shows the last body's family:\n%s", body, got)
		}
	}
}
