package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/journal"
)

// etcdShapedLog commits every batch at once and turns each value into
// what etcdlog stores (a record that compresses its own metrics as it is,
// anything else as its s2 block), counting the bytes.
type etcdShapedLog struct {
	stored, values int
}

func (l *etcdShapedLog) Append(ops ...journal.Op) (journal.Commit, error) {
	for _, op := range ops {
		if op.Kind != journal.OpSet {
			continue
		}
		l.values++
		if len(op.Value) >= 6 && op.Value[0] == 3 {
			l.stored += len(op.Value)
		} else {
			l.stored += len(s2.Encode(nil, op.Value))
		}
	}
	return doneCommit(0), nil
}

// BenchmarkPushJournaled measures what a cluster leader spends on one
// push of the bench payload (decoded already) into a store of 1,000
// groups, its group's record and etcd's value included, and reports the
// bytes etcd stores per group (stored-B/group).
func BenchmarkPushJournaled(b *testing.B) {
	const groups = 1000
	s := filledStore(b, groups)
	log := &etcdShapedLog{}
	s.SetJournal(log)
	ctx := context.Background()
	keys := make([]groupkey.Key, groups)
	for i := range keys {
		keys[i] = groupkey.New(map[string]string{"job": "bench", "instance": fmt.Sprintf("i%d", i)})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		fams := payload.Families(i%groups, i)
		b.StartTimer()
		if _, err := s.Push(ctx, Push{Key: keys[i%groups], Method: Replace, Families: fams, Time: time.Now()}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(log.stored)/float64(log.values), "stored-B/group")
}

// BenchmarkApplyFromEtcd measures what a cluster follower spends on one
// replicated push from the value etcd delivers: turning it back into the
// record (decompressing it, unless it is a record that compresses its own
// metrics) and applying it (as BenchmarkApplyReplicated).
func BenchmarkApplyFromEtcd(b *testing.B) {
	const groups = 1000
	src := filledStore(b, groups)
	ops := testJournalOps(b, src)
	values := make([][]byte, len(ops))
	for i, op := range ops {
		values[i] = op.Value
		if len(op.Value) < 6 || op.Value[0] != 3 {
			values[i] = s2.Encode(nil, op.Value)
		}
	}
	dst := New(Options{})
	if err := dst.Apply(1, ops); err != nil {
		b.Fatal(err)
	}
	var buf []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		v := values[i%len(values)]
		if len(v) < 6 || v[0] != 3 {
			n, err := s2.DecodedLen(v)
			if err != nil {
				b.Fatal(err)
			}
			if cap(buf) < n {
				buf = make([]byte, n)
			}
			if v, err = s2.Decode(buf[:n], v); err != nil {
				b.Fatal(err)
			}
		}
		op := journal.Op{Kind: journal.OpSet, Key: ops[i%len(ops)].Key, Value: v}
		if err := dst.Apply(journal.Position(i+2), []journal.Op{op}); err != nil {
			b.Fatal(err)
		}
	}
}
