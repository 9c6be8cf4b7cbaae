package etcdtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/pushgate/pushgate/journal/etcdlog"
)

func TestAPausedLeadersLateCommitIsRejectedAndItStepsDown(t *testing.T) {
	c := startCluster(t, 3, nil)
	prefix := newPrefix()
	link := newProxy(t, c.endpoints[0])
	// The old leader's commit must still be in flight when the link comes
	// back, long after its lease expired: a long request timeout.
	old := openLog(t, []string{link.endpoint}, prefix, func(cfg *etcdlog.Config) { cfg.RequestTimeout = 20 * time.Second })
	next := openLog(t, c.endpoints, prefix, nil)
	follow(t, old)
	follow(t, next)
	watcher := follow(t, openLog(t, c.endpoints, prefix, nil))
	campaign(t, old)
	mustCommit(t, old, set("g", "before"))

	link.pause()
	late, err := old.Append(set("g", "late"))
	if err != nil {
		link.unpause()
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the cut-off leader steps down", func() bool { return !old.IsLeader() })
	if !errors.Is(old.TermErr(), etcdlog.ErrSessionLost) {
		t.Errorf("term ended by %v, want ErrSessionLost", old.TermErr())
	}
	if _, err := old.Append(set("g", "after")); !errors.Is(err, etcdlog.ErrNotLeader) {
		t.Errorf("Append on the stepped-down leader: %v, want ErrNotLeader", err)
	}
	// Once etcd expired the old lease, its election key is gone; with no
	// new leader yet, head has not moved, so only the fence on the
	// election key stops the late commit.
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	eventually(t, 10*time.Second, "etcd expires the old leader's lease", func() bool {
		url, err := next.Leader(ctx)
		return err == nil && url == ""
	})
	link.unpause()
	if err := late.Wait(ctx); !errors.Is(err, etcdlog.ErrNotLeader) || !strings.Contains(err.Error(), "deposed") {
		t.Fatalf("the late commit: %v; want it rejected as deposed", err)
	}
	campaign(t, next)
	newPos := mustCommit(t, next, set("g", "new"))
	// Let the watcher see everything up to now: nothing after the new
	// leader's commit may be the old leader's.
	cur, err := next.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the watcher is current", func() bool { return watcher.position() >= cur })
	if v, _ := watcher.group("g"); v != "new" {
		t.Errorf("g = %q, want the new leader's value", v)
	}
	for _, b := range watcher.allBatches() {
		for _, op := range b.Ops {
			if string(op.Value) == "late" {
				t.Errorf("the deposed leader's late write was committed at %d (new leader's at %d)", b.Position, newPos)
			}
		}
	}
}

func TestAnAmbiguousCommitEndsTheTermAndTheNextTermFencesIt(t *testing.T) {
	c := startCluster(t, 1, nil)
	prefix := newPrefix()
	link := newProxy(t, c.endpoints[0])
	// A request timeout well under the lease TTL: the commit times out
	// while the session survives the pause.
	l := openLog(t, []string{link.endpoint}, prefix, func(cfg *etcdlog.Config) {
		cfg.RequestTimeout = 500 * time.Millisecond
		cfg.LeaseTTL = 10 * time.Second
	})
	own := follow(t, l)
	watcher := follow(t, openLog(t, c.endpoints, prefix, nil))
	campaign(t, l)
	mustCommit(t, l, set("g", "before"))

	link.pause()
	cm, err := l.Append(set("g", "doubtful"))
	if err != nil {
		link.unpause()
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = cm.Wait(ctx)
	link.unpause()
	if !errors.Is(err, etcdlog.ErrAmbiguous) {
		t.Fatalf("a commit timing out: %v; want ErrAmbiguous", err)
	}
	if l.IsLeader() || !errors.Is(l.TermErr(), etcdlog.ErrAmbiguous) {
		t.Fatalf("after an ambiguous commit: leading %v, term error %v", l.IsLeader(), l.TermErr())
	}
	if _, err := l.Append(set("g", "x")); !errors.Is(err, etcdlog.ErrNotLeader) || !errors.Is(err, etcdlog.ErrAmbiguous) {
		t.Errorf("Append after an ambiguous commit: %v; want ErrNotLeader and ErrAmbiguous", err)
	}

	// The next term's barrier settles the doubt: the doubtful commit
	// either landed before it or never will.
	if err := l.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	after := mustCommit(t, l, set("g", "after"))
	eventually(t, 10*time.Second, "both followers reach the last commit", func() bool {
		return own.position() >= after && watcher.position() >= after
	})
	for _, b := range watcher.allBatches() {
		for _, op := range b.Ops {
			if string(op.Value) != "doubtful" {
				continue
			}
			t.Logf("the doubtful commit landed at %d", b.Position)
			if b.Position > after {
				t.Error("the doubtful commit landed after the next term began")
			}
			for _, ob := range own.allBatches() {
				if ob.Position == b.Position && (ob.Own || len(ob.Ops) != 1) {
					t.Errorf("the doubtful commit reached its writer as Own=%v with %d ops: the store, which took it back, would not apply it", ob.Own, len(ob.Ops))
				}
			}
		}
	}
	if v, _ := watcher.group("g"); v != "after" {
		t.Errorf("g = %q, want after", v)
	}
	if st := l.Stats(); st.Ambiguous != 1 {
		t.Errorf("Stats.Ambiguous = %d, want 1", st.Ambiguous)
	}
}

func TestACommitNotBuiltOnTheTermsLastCommitFailsAndEndsTheTerm(t *testing.T) {
	c := startCluster(t, 1, nil)
	prefix := newPrefix()
	l := openLog(t, c.endpoints, prefix, nil)
	follow(t, l)
	campaign(t, l)
	mustCommit(t, l, set("g", "1"))

	// Another writer moves head behind the leader's back.
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.endpoints, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, prefix+"head", "intruder/1"); err != nil {
		t.Fatal(err)
	}
	cm, err := l.Append(set("g", "2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cm.Wait(ctx); !errors.Is(err, etcdlog.ErrNotLeader) || !strings.Contains(err.Error(), "intruder/1") {
		t.Fatalf("a commit after head moved: %v; want ErrNotLeader naming the other writer", err)
	}
	if l.IsLeader() {
		t.Error("the term goes on after a failed commit")
	}
	resp, err := cli.Get(ctx, prefix+"groups/g")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(resp.Kvs[0].Value), string(s2.Encode(nil, []byte("1"))); got != want {
		t.Errorf("g holds %q, want the last committed value (%q)", got, want)
	}
}
