package etcdtest

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/journal/filejournal"
	"github.com/pushgate/pushgate/store"
)

// benchGroups is how many distinct groups the benchmark pushes to: more
// than 64 appenders can have in flight, so that coalescing does not shrink
// the work.
const benchGroups = 1024

// encodedGroups returns benchGroups bench-payload groups as the store
// encodes them for its log: what a leader appends for each push.
func encodedGroups(b *testing.B) []journal.Op {
	b.Helper()
	s := store.New(store.Options{})
	t0 := time.Unix(1_700_000_000, 0)
	for i := range benchGroups {
		if _, err := s.Push(context.Background(), store.Push{Key: groupKey(i), Families: payload.Families(i, 1), Time: t0}); err != nil {
			b.Fatal(err)
		}
	}
	ops, err := s.JournalOps()
	if err != nil {
		b.Fatal(err)
	}
	return ops
}

// BenchmarkAppendWait measures durable pushes: appenders goroutines each
// Append one bench-payload group (as the store encodes it) and Wait for its
// commit, again and again, through a 3-member etcd cluster on loopback
// (backend=etcd, a fresh cluster each run) and, for comparison in the same run, through the embedded
// file journal (backend=journal). It reports pushes/s, commits/s (etcd
// transactions or journal fsyncs) and the p50/p99 latency of Append+Wait.
func BenchmarkAppendWait(b *testing.B) {
	ops := encodedGroups(b)
	raw, packed := 0, 0
	for _, op := range ops {
		raw += len(op.Value)
		packed += len(s2.Encode(nil, op.Value))
	}
	for _, appenders := range []int{8, 64} {
		b.Run(fmt.Sprintf("backend=etcd/appenders=%d", appenders), func(b *testing.B) {
			// A fresh cluster each time: etcd keeps every revision until
			// compacted, and a database grown by earlier runs slows the
			// later ones.
			c := startCluster(b, 3, nil)
			l := openLog(b, c.endpoints, newPrefix(), nil)
			follow(b, l)
			campaign(b, l)
			before := l.Stats().Commits
			runAppenders(b, appenders, ops, l.Append, func() uint64 { return l.Stats().Commits - before })
			b.ReportMetric(float64(raw)/float64(len(ops)), "value-B")
			b.ReportMetric(float64(packed)/float64(len(ops)), "stored-B")
		})
		b.Run(fmt.Sprintf("backend=journal/appenders=%d", appenders), func(b *testing.B) {
			j, err := filejournal.Open(context.Background(), filepath.Join(b.TempDir(), "state.pgj"), filejournal.Options{},
				func(string, []byte) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { j.Close() })
			before := j.Stats().SyncCount
			runAppenders(b, appenders, ops, func(ops ...journal.Op) (journal.Commit, error) { return j.Append(ops...) },
				func() uint64 { return j.Stats().SyncCount - before })
		})
	}
}

// runAppenders runs b.N Append+Wait calls spread over appenders goroutines
// and reports the rates and latencies. commits returns the backend's
// commits (transactions, fsyncs) since the start.
func runAppenders(b *testing.B, appenders int, ops []journal.Op, appendOps func(...journal.Op) (journal.Commit, error), commits func() uint64) {
	b.Helper()
	var next atomic.Int64
	lat := make([][]time.Duration, appenders)
	var failed atomic.Value
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range appenders {
		wg.Go(func() {
			ctx := context.Background()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				t := time.Now()
				c, err := appendOps(ops[int(i)%len(ops)])
				if err == nil {
					err = c.Wait(ctx)
				}
				if err != nil {
					failed.Store(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "pushes/s")
	b.ReportMetric(float64(commits())/elapsed.Seconds(), "commits/s")
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(0, "ns/op")
}
