package etcdtest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/groupcodec"
	"github.com/pushgate/pushgate/groupcodec/groupcodectest"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/journal/etcdlog"
	"github.com/pushgate/pushgate/store"
)

// version2Value returns what a replica writing groupcodec version 2 stored
// in etcd for the record v (of the current version): the version 2 record
// as an s2 block.
func version2Value(t testing.TB, v []byte) []byte {
	t.Helper()
	b, err := groupcodectest.Legacy(2, v)
	if err != nil {
		t.Fatal(err)
	}
	return s2.Encode(nil, b)
}

func TestAReplicaLoadsAndFollowsWhatTheEarlierVersionWroteAndStoresItsOwnRecordsAsTheyAre(t *testing.T) {
	c := startCluster(t, 1, nil)
	prefix := newPrefix()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.endpoints, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// The cluster as the earlier version left it: its meta (codec 2), and
	// groups stored as s2 blocks of version 2 records.
	openLog(t, c.endpoints, prefix, nil).Close()
	src := store.New(store.Options{})
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 5 {
		if _, err := src.Push(ctx, store.Push{Key: groupKey(i), Families: payload.Families(i, 0), Time: t0}); err != nil {
			t.Fatal(err)
		}
	}
	ops, err := src.JournalOps()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops[:4] {
		if _, err := cli.Put(ctx, prefix+"groups/"+op.Key, string(version2Value(t, op.Value))); err != nil {
			t.Fatal(err)
		}
	}

	l := openLog(t, c.endpoints, prefix, func(cfg *etcdlog.Config) {
		cfg.Meta = etcdlog.Meta{Codec: groupcodec.Version, OldestCodec: groupcodec.OldestVersion, Settings: cfg.Meta.Settings}
	})
	replica := startReplica(t, l)
	if n := len(replica.Groups()); n != 4 {
		t.Fatalf("the replica loaded %d groups, want 4", n)
	}
	// The earlier version's leader commits another group; the replica
	// follows.
	resp, err := cli.Put(ctx, prefix+"groups/"+ops[4].Key, string(version2Value(t, ops[4].Value)))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the replica applies the earlier version's commit",
		func() bool { return replica.Applied() >= journal.Position(resp.Header.Revision) })
	if got, want := scrapeText(t, replica), scrapeText(t, src); !bytes.Equal(got, want) {
		t.Errorf("the replica serves\n%.2000s\nthe earlier version's groups\n%.2000s", got, want)
	}

	// Leading, the replica writes its records as they are.
	campaign(t, l)
	replica.SetJournal(l)
	k := groupkey.New(map[string]string{"job": payload.Job, "instance": "new"})
	if _, err := replica.Push(ctx, store.Push{Key: k, Families: payload.Families(9, 0), Time: t0}); err != nil {
		t.Fatal(err)
	}
	got, err := cli.Get(ctx, prefix+"groups/"+k.ID())
	if err != nil || len(got.Kvs) != 1 {
		t.Fatalf("get the pushed group: %v, %d keys", err, len(got.Kvs))
	}
	want, err := replica.JournalOps()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range want {
		if op.Key == k.ID() && !bytes.Equal(got.Kvs[0].Value, op.Value) {
			t.Errorf("etcd holds %d bytes (version %d), not the %d-byte record", len(got.Kvs[0].Value), got.Kvs[0].Value[0], len(op.Value))
		}
	}
	t.Logf("group of the bench payload: %d bytes as a version 2 record in s2, %d as a version 3 record\n",
		len(version2Value(t, got.Kvs[0].Value)), len(got.Kvs[0].Value))
}
