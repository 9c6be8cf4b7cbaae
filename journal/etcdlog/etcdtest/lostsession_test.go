package etcdtest

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/pushgate/pushgate/journal/etcdlog"
)

// TestACampaignAfterALostSessionDoesNotWaitBehindItsOwnOldKey: the Log
// calls its session lost when no renewal was answered for the TTL, but
// etcd may keep the lease alive all the same (here the renewals reach it
// and only their answers are held; in a cluster, etcd's new leader
// extends every lease). The old election key, older than any new one,
// would then hold the Log's next campaign until the lease expired. A test
// client keeps that lease alive for good, so without the revocation the
// campaign never ends; with it, the Log leads again and the old lease is
// gone.
func TestACampaignAfterALostSessionDoesNotWaitBehindItsOwnOldKey(t *testing.T) {
	c := startCluster(t, 3, nil)
	prefix := newPrefix()
	link := newProxy(t, c.endpoints[0])
	l := openLog(t, []string{link.endpoint}, prefix, nil)
	follow(t, l)
	campaign(t, l)

	cli, err := clientv3.New(clientv3.Config{Endpoints: c.endpoints, Logger: zap.NewNop(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	keys, err := cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var old clientv3.LeaseID
	for _, kv := range keys.Kvs {
		if kv.Lease != 0 {
			old = clientv3.LeaseID(kv.Lease)
		}
	}
	if old == 0 {
		t.Fatalf("no key under %s carries a lease: %v", prefix, keys.Kvs)
	}
	kctx, stopKeeping := context.WithCancel(ctx)
	defer stopKeeping()
	kept, err := cli.KeepAlive(kctx, old)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range kept {
		}
	}()

	// Requests reach etcd; answers do not come back.
	link.PauseRx()
	eventually(t, 15*time.Second, "the Log calls its session lost", func() bool { return !l.IsLeader() })
	if !errors.Is(l.TermErr(), etcdlog.ErrSessionLost) {
		t.Errorf("term ended by %v, want ErrSessionLost", l.TermErr())
	}
	link.UnpauseRx()
	campaign(t, l)
	if !l.IsLeader() {
		t.Fatal("the Log does not lead after its campaign")
	}
	ttl, err := cli.TimeToLive(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if ttl.TTL != -1 {
		t.Errorf("the lost session's lease %x lives on (TTL %ds), want it revoked", int64(old), ttl.TTL)
	}
}
