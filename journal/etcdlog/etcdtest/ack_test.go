package etcdtest

import (
	"context"
	"testing"
	"time"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/journal/etcdlog"
	"github.com/pushgate/pushgate/store"
)

// TestNoDeleteIsAcknowledgedWhileTheLeadersLinkIsStalled replays the
// sequence that lost an acknowledged DELETE: PUT a; the leader's link to
// etcd stalls; PUT x hangs; DELETE a queues behind it; DELETE a again. The
// second DELETE found a already removed from the leader's store (the first
// had installed its removal before etcd committed it) and was answered at
// once with no commit; the hanging PUT then failed, the term ended, the
// queued DELETE was rolled back, and every replica served a again. Now
// each write answers from its own commit: none of the three is
// acknowledged, and etcd, which every replica loads, still holds a, as the
// leader serves it.
func TestNoDeleteIsAcknowledgedWhileTheLeadersLinkIsStalled(t *testing.T) {
	c := startCluster(t, 3, nil)
	prefix := newPrefix()
	link := newProxy(t, c.endpoints[0])
	// A request timeout well under the lease: the stalled commit fails
	// (ambiguous) and ends the term while the session lives.
	la := openLog(t, []string{link.endpoint}, prefix, func(cfg *etcdlog.Config) {
		cfg.RequestTimeout = time.Second
		cfg.LeaseTTL = 10 * time.Second
	})
	sa := startReplica(t, la)
	campaign(t, la)
	sa.SetJournal(la)
	ctx := context.Background()
	a, x := groupKey(1), groupKey(2)
	if _, err := sa.Push(ctx, store.Push{Key: a, Families: payload.Families(1, 1), Time: time.Unix(1700000000, 0)}); err != nil {
		t.Fatal(err)
	}

	link.pause()
	type answer struct {
		what string
		err  error
	}
	answers := make(chan answer, 3)
	go func() {
		_, err := sa.Push(ctx, store.Push{Key: x, Families: payload.Families(2, 1), Time: time.Unix(1700000000, 0)})
		answers <- answer{"PUT x", err}
	}()
	eventually(t, 5*time.Second, "PUT x is in flight", func() bool { return inFlight(sa) })
	go func() {
		_, err := sa.Delete(ctx, a)
		answers <- answer{"the first DELETE a", err}
	}()
	go func() {
		_, err := sa.Delete(ctx, a)
		answers <- answer{"the second DELETE a", err}
	}()
	for range 3 {
		select {
		case ans := <-answers:
			if ans.err == nil {
				t.Errorf("%s was acknowledged while etcd could commit nothing", ans.what)
			} else {
				t.Logf("%s: %v", ans.what, ans.err)
			}
		case <-time.After(30 * time.Second):
			link.unpause()
			t.Fatal("a write stayed unanswered for 30s")
		}
	}
	link.unpause()
	if sa.Group(a) == nil {
		t.Error("the leader stopped serving a, which no committed DELETE removed")
	}
	if sa.Group(x) != nil {
		t.Error("the leader serves x, whose commit failed")
	}
	fresh := startReplica(t, openLog(t, c.endpoints, prefix, nil))
	if fresh.Group(a) == nil {
		t.Error("etcd lost a, which no acknowledged DELETE removed")
	}
}

// inFlight reports whether s has a change waiting for its commit: the head
// differs from what it serves.
func inFlight(s *store.Store) bool {
	return s.Stats().Series != servedSeries(s)
}

// servedSeries counts the series of the groups s serves.
func servedSeries(s *store.Store) int {
	n := 0
	for _, g := range s.Groups() {
		n += g.SeriesCount()
	}
	return n
}
