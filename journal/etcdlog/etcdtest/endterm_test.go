package etcdtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pushgate/pushgate/journal/etcdlog"
)

// TestEndTermOfLetsTheNextReplicaLeadBeforeTheLeaseExpires: a replica
// that knows the leader's process is gone ends its term by revoking the
// lease its election key carries. The next replica leads well before the
// 30s lease would have expired, and the old term can commit nothing more.
func TestEndTermOfLetsTheNextReplicaLeadBeforeTheLeaseExpires(t *testing.T) {
	c := startCluster(t, 3, nil)
	prefix := newPrefix()
	long := func(cfg *etcdlog.Config) { cfg.LeaseTTL = 30 * time.Second }
	old, next := openLog(t, c.endpoints, prefix, long), openLog(t, c.endpoints, prefix, long)
	follow(t, old)
	follow(t, next)
	campaign(t, old)
	mustCommit(t, old, set("g", "old"))
	ctx := context.Background()

	if ended, err := next.EndTermOf(ctx, "http://not-the-leader.test"); err != nil || ended {
		t.Fatalf("EndTermOf a replica that does not lead = %v, %v; want false, nil", ended, err)
	}
	leaderURL, err := next.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if ended, err := next.EndTermOf(ctx, leaderURL); err != nil || !ended {
		t.Fatalf("EndTermOf the leader = %v, %v; want true, nil", ended, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := next.Campaign(cctx); err != nil {
		t.Fatalf("the next replica could not lead: %v", err)
	}
	t.Logf("the next replica leads %s after the old term was ended", time.Since(start).Round(time.Millisecond))
	late, err := old.Append(set("g", "late"))
	if err == nil {
		err = late.Wait(cctx)
	}
	if !errors.Is(err, etcdlog.ErrNotLeader) {
		t.Errorf("a commit of the ended term: %v, want ErrNotLeader", err)
	}
}
