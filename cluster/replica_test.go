package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/store"
)

// startReplica runs a replica on log until the test ends.
func startReplica(t *testing.T, log *fakeLog) *Replica {
	t.Helper()
	r := New(Config{
		Log:          log,
		NewStore:     func() *store.Store { return store.New(store.Options{}) },
		AdvertiseURL: log.url,
		Retry:        10 * time.Millisecond,
		StaleAfter:   200 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return r
}

// eventually polls cond for up to 10 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// push writes group job through r, as the web layer does: admitted by
// BeginWrite, into r's served store.
func push(t *testing.T, r *Replica, job string) error {
	t.Helper()
	release, ok := r.BeginWrite()
	if !ok {
		return errors.New("this replica takes no writes")
	}
	defer release()
	_, err := r.Store().Push(context.Background(), store.Push{
		Key:    groupkey.New(map[string]string{"job": job}),
		Method: store.Replace,
		Families: []*dto.MetricFamily{{
			Name:   proto.String("m_" + job),
			Type:   dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(1)}}},
		}},
		Time: time.Unix(1700000000, 0),
	})
	return err
}

// groups returns the jobs r's served store holds.
func groups(r *Replica) []string {
	var out []string
	for _, g := range r.Store().Groups() {
		job, _ := g.Key().Get("job")
		out = append(out, job)
	}
	return out
}

func hasGroups(r *Replica, n int) func() bool {
	return func() bool { return r.Store().Stats().Groups == n }
}

func TestAReplicaServesTheLogOnceCaughtUpAndForwardsItsWrites(t *testing.T) {
	e := newFakeEtcd()
	leader := startReplica(t, e.log("http://leader"))
	eventually(t, "the only replica leads", func() bool { return leader.Status().Leading })
	for i := range 3 {
		if err := push(t, leader, fmt.Sprint("before", i)); err != nil {
			t.Fatal(err)
		}
	}
	follower := startReplica(t, e.log("http://follower"))
	eventually(t, "the new replica is ready", follower.Ready)
	if got := follower.Store().Stats().Groups; got != 3 {
		t.Fatalf("the ready replica serves %d groups, want 3", got)
	}
	if _, ok := follower.BeginWrite(); ok {
		t.Fatal("a follower admitted a write to its own store")
	}
	if url, _ := follower.Leader(context.Background()); url != "http://leader" {
		t.Errorf("follower.Leader = %q, want http://leader", url)
	}
	if url, _ := leader.Leader(context.Background()); url != "" {
		t.Errorf("leader.Leader = %q, want \"\" (itself)", url)
	}
	if err := push(t, leader, "after"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := follower.WaitApplied(ctx, uint64(leader.Store().Applied())); err != nil {
		t.Fatal(err)
	}
	if got := groups(follower); len(got) != 4 {
		t.Errorf("once it applied the leader's commit the follower serves %v, want 4 groups", got)
	}
}

func TestAReplicaIsNotReadyUntilItAppliedWhatTheLogCommitted(t *testing.T) {
	e := newFakeEtcd()
	leader := startReplica(t, e.log("http://leader"))
	eventually(t, "the only replica leads", func() bool { return leader.Status().Leading })
	slowLog := e.log("http://slow")
	slowLog.pause(true)
	if err := push(t, leader, "a"); err != nil {
		t.Fatal(err)
	}
	// b is committed after the slow replica loaded, before it asks the
	// log how far it is.
	pushed := make(chan error, 1)
	slowLog.beforeCurrent = sync.OnceFunc(func() { pushed <- push(t, leader, "b") })
	slow := startReplica(t, slowLog)
	if err := <-pushed; err != nil {
		t.Fatal(err)
	}
	eventually(t, "the slow replica loaded", hasGroups(slow, 1))
	// The slow replica's watch delivers nothing: it stays unready however
	// long it runs. Poll a few times rather than sleep once.
	for range 50 {
		if slow.Ready() {
			t.Fatal("a replica whose watch is behind the log is ready")
		}
		time.Sleep(time.Millisecond)
	}
	slowLog.pause(false)
	eventually(t, "the slow replica caught up and is ready", func() bool { return slow.Ready() && slow.Store().Stats().Groups == 2 })
}

func TestACompactedWatchRebuildsTheStoreFromTheLog(t *testing.T) {
	e := newFakeEtcd()
	leader := startReplica(t, e.log("http://leader"))
	eventually(t, "the only replica leads", func() bool { return leader.Status().Leading })
	followerLog := e.log("http://follower")
	follower := startReplica(t, followerLog)
	eventually(t, "the follower is ready", follower.Ready)
	first := follower.Store()
	followerLog.pause(true)
	if err := push(t, leader, "missed"); err != nil {
		t.Fatal(err)
	}
	e.compact()
	followerLog.pause(false)
	eventually(t, "the follower rebuilt its store", func() bool { return follower.Status().Rebuilds == 1 })
	eventually(t, "the rebuilt follower is ready with the missed group", func() bool {
		return follower.Ready() && follower.Store().Stats().Groups == 1
	})
	if follower.Store() == first {
		t.Error("the follower kept the store whose watch was compacted away")
	}
	if first.Stats().Groups != 0 {
		t.Error("the old store was changed after the compaction")
	}
}

func TestAnAmbiguousCommitEndsTheTermAndTheLeaderRebuildsBeforeWritingAgain(t *testing.T) {
	e := newFakeEtcd()
	leader := startReplica(t, e.log("http://leader"))
	eventually(t, "the only replica leads", func() bool { return leader.Status().Leading })
	e.mu.Lock()
	e.failNext = fmt.Errorf("txn timed out: %w", journal.ErrAmbiguous)
	e.mu.Unlock()
	var perr *store.PersistenceError
	if err := push(t, leader, "maybe"); !errors.As(err, &perr) {
		t.Fatalf("the ambiguous push answered %v, want a PersistenceError", err)
	}
	// The store rolled the push back; the log committed it. The leader
	// rebuilds from the log and campaigns again.
	eventually(t, "the leader rebuilt and leads again", func() bool {
		return leader.Status().Rebuilds == 1 && leader.Status().Leading && leader.Ready()
	})
	if got := groups(leader); len(got) != 1 || got[0] != "maybe" {
		t.Fatalf("after the rebuild the leader serves %v, want the committed group", got)
	}
	if err := push(t, leader, "next"); err != nil {
		t.Fatalf("a push in the new term: %v", err)
	}
}

func TestAnotherReplicaTakesWritesWhenTheLeaderDies(t *testing.T) {
	e := newFakeEtcd()
	firstLog := e.log("http://first")
	first := startReplica(t, firstLog)
	eventually(t, "the first replica leads", func() bool { return first.Status().Leading })
	second := startReplica(t, e.log("http://second"))
	eventually(t, "the second replica is ready", second.Ready)
	if err := push(t, first, "a"); err != nil {
		t.Fatal(err)
	}
	e.kill(firstLog)
	// The dead replica's term ended with its session: the log refuses its
	// writes at once, whatever its status says until its campaign loop
	// notices.
	if err := push(t, first, "late"); err == nil {
		t.Error("the dead replica still admits writes")
	}
	eventually(t, "the second replica leads", func() bool { return second.Status().Leading })
	eventually(t, "the dead replica stops reporting that it leads", func() bool { return !first.Status().Leading })
	if err := push(t, second, "b"); err != nil {
		t.Fatal(err)
	}
	if got := groups(second); len(got) != 2 {
		t.Errorf("the new leader serves %v, want both groups", got)
	}
}

// TestAReplicaThatCannotConfirmItIsCurrentIsNotReady: a replica whose watch
// stalled while the log moved on (a hung etcd member), or that cannot read
// the log's latest commit (a lost quorum), is not ready within StaleAfter,
// and ready again once it has applied what the log holds. Before, such a
// replica stayed ready and served what it had for the whole fault.
func TestAReplicaThatCannotConfirmItIsCurrentIsNotReady(t *testing.T) {
	e := newFakeEtcd()
	leader := startReplica(t, e.log("http://leader"))
	eventually(t, "the only replica leads", func() bool { return leader.Status().Leading })
	log := e.log("http://follower")
	r := startReplica(t, log)
	eventually(t, "the follower is ready", r.Ready)

	log.pause(true)
	if err := push(t, leader, "a"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the follower whose watch stalled is not ready", func() bool { return !r.Ready() })
	log.pause(false)
	eventually(t, "the follower caught up and is ready again", r.Ready)

	log.failCurrent(true)
	eventually(t, "the follower that cannot read the log is not ready", func() bool { return !r.Ready() })
	log.failCurrent(false)
	eventually(t, "the follower is ready again", r.Ready)
}

// TestAReplicaToldTheLeaderIsGoneEndsItsTerm: LeaderGone ends the dead
// leader's term through the log, so another replica leads without waiting
// for the lease to expire; a LeaderGone naming a replica that does not
// lead changes nothing.
func TestAReplicaToldTheLeaderIsGoneEndsItsTerm(t *testing.T) {
	e := newFakeEtcd()
	firstLog := e.log("http://first")
	first := startReplica(t, firstLog)
	eventually(t, "the first replica leads", func() bool { return first.Status().Leading })
	second := startReplica(t, e.log("http://second"))
	eventually(t, "the second replica is ready", second.Ready)
	second.LeaderGone(context.Background(), "http://elsewhere")
	if !first.Status().Leading {
		t.Fatal("a LeaderGone naming no leader ended the term")
	}
	// The first replica's process is gone: it campaigns no more.
	e.mu.Lock()
	firstLog.dead = true
	e.mu.Unlock()
	second.LeaderGone(context.Background(), "http://first")
	eventually(t, "the second replica leads", func() bool { return second.Status().Leading })
}
