package etcdtest

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	dto "github.com/prometheus/client_model/go"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/groupcodec"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/store"
)

// conflictKeys are two groups that expose the same series
// m{instance="x",job="a"}: one has it from its grouping labels, the other
// from the pushed labels.
var conflictKeys = [2]groupkey.Key{
	groupkey.New(map[string]string{"job": "a"}),
	groupkey.New(map[string]string{"job": "a", "instance": "x"}),
}

// conflictingRecords returns the records of conflictKeys' groups as the
// store encodes them, each pushed into a scratch store of its own (one
// store refuses the second push).
func conflictingRecords(t *testing.T) [2]journal.Op {
	t.Helper()
	gauge := func(v float64, labels ...*dto.LabelPair) []*dto.MetricFamily {
		return []*dto.MetricFamily{{Name: proto.String("m"), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Label: labels, Gauge: &dto.Gauge{Value: proto.Float64(v)}}}}}
	}
	pushes := [2]store.Push{
		{Key: conflictKeys[0], Families: gauge(1, &dto.LabelPair{Name: proto.String("instance"), Value: proto.String("x")})},
		{Key: conflictKeys[1], Families: gauge(2)},
	}
	var records [2]journal.Op
	for i, p := range pushes {
		s := store.New(store.Options{})
		p.Time = time.Unix(1_700_000_000, 0)
		if _, err := s.Push(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		ops, err := s.JournalOps()
		if err != nil || len(ops) != 1 {
			t.Fatalf("a scratch store holds %d records (%v)", len(ops), err)
		}
		records[i] = ops[0]
	}
	return records
}

// etcdValue is what etcdlog stores for a group record: the record itself
// when it compresses its own families (version 3), else its s2 block.
func etcdValue(v []byte) string {
	if groupcodec.Compressed(v) {
		return string(v)
	}
	return string(s2.Encode(nil, v))
}

// TestALogHoldingConflictingGroupsLoadsAsItIsFollowed (issue 20): etcd
// holds two groups that expose one series, written straight into it as an
// older version could. A replica that followed the log while they were
// written and one that loaded the log afterwards serve byte-identical
// /metrics, and each counted the one conflict: load (key order) and
// follow (commit order) apply the same rule, whichever of the two records
// comes first. Before, load skipped the later record and follow installed
// it, so the two replicas differed.
func TestALogHoldingConflictingGroupsLoadsAsItIsFollowed(t *testing.T) {
	c := startCluster(t, 1, nil)
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.endpoints, Logger: zap.NewNop(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	records := conflictingRecords(t)
	inKeyOrder := records
	if inKeyOrder[0].Key > inKeyOrder[1].Key {
		inKeyOrder[0], inKeyOrder[1] = inKeyOrder[1], inKeyOrder[0]
	}
	orders := []struct {
		name    string
		records [2]journal.Op
	}{
		{"written in key order", inKeyOrder},
		{"written in reverse key order", [2]journal.Op{inKeyOrder[1], inKeyOrder[0]}},
	}
	for _, order := range orders {
		t.Run(order.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			prefix := newPrefix()
			followed := startProductReplica(t, c.endpoints, prefix, "conflict", 15*time.Second, nil)
			// Ordinary groups, pushed through the replica once it leads
			// (it is the only one): the records land among them.
			var release func()
			eventually(t, 15*time.Second, "the replica takes writes", func() bool {
				var ok bool
				release, ok = followed.BeginWrite()
				return ok
			})
			for i := range 10 {
				p := store.Push{Key: groupKey(i), Families: payload.Families(i, i), Time: time.Unix(1_700_000_000, 0)}
				if _, err := followed.Store().Push(ctx, p); err != nil {
					release()
					t.Fatal(err)
				}
			}
			release()
			var rev int64
			for _, r := range order.records {
				resp, err := cli.Put(ctx, prefix+"groups/"+r.Key, etcdValue(r.Value))
				if err != nil {
					t.Fatal(err)
				}
				rev = resp.Header.Revision
			}
			eventually(t, 10*time.Second, "the replica following the log applies both records", func() bool {
				return followed.Store().Applied() >= journal.Position(rev)
			})
			loaded := startProductReplica(t, c.endpoints, prefix, "conflict", 15*time.Second, nil)

			stores := []struct {
				name string
				s    *store.Store
			}{{"followed", followed.Store()}, {"loaded", loaded.Store()}}
			for _, st := range stores {
				for _, k := range conflictKeys {
					if st.s.Group(k) == nil {
						t.Errorf("the replica that %s the log does not serve %s", st.name, k)
					}
				}
				if n := st.s.ApplyConflicts(); n != 1 {
					t.Errorf("the replica that %s the log counted %d conflicts, want 1", st.name, n)
				}
			}
			want := scrapeText(t, followed.Store())
			if got := scrapeText(t, loaded.Store()); !bytes.Equal(got, want) {
				t.Errorf("the replica that loaded the log and the one that followed it serve different bytes (%d and %d); %s", len(got), len(want), firstDiff(got, want))
			}
			if !bytes.Contains(want, []byte(`m{instance="x",job="a"} 1`)) || !bytes.Contains(want, []byte(`m{instance="x",job="a"} 2`)) {
				t.Errorf("the scrape lacks one of the conflicting groups:\n%s", want)
			}
		})
	}
}

// firstDiff names the first line where two scrapes differ.
func firstDiff(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := 0; i < max(len(la), len(lb)); i++ {
		var x, y []byte
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if !bytes.Equal(x, y) {
			return fmt.Sprintf("line %d: %q and %q", i+1, x, y)
		}
	}
	return "no line differs"
}
