package filejournal

import (
	"context"
	"fmt"
	"github.com/pushgate/pushgate/journal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// benchGroups is how many distinct grouping keys the benchmarks overwrite,
// and benchValueSize the size of one group's state (a typical push).
const (
	benchGroups    = 1000
	benchValueSize = 7 << 10
)

var benchWriterCounts = []int{1, 8, 64}

// runWriters runs op b.N times spread over writers goroutines, each doing a
// durable write per call, and reports ops/s.
func runWriters(b *testing.B, writers int, op func(i int) error) {
	b.Helper()
	var next atomic.Int64
	b.SetBytes(benchValueSize)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if err := op(int(i)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
}

// BenchmarkDurableSet measures Append+Wait of one 7 KB value: the cost of a
// durable push with group commit. Compaction may run every second, so its
// cost is included and the file stays bounded.
func BenchmarkDurableSet(b *testing.B) {
	value := []byte(strings.Repeat("v", benchValueSize))
	for _, writers := range benchWriterCounts {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			j, err := Open(context.Background(), filepath.Join(b.TempDir(), "state.pgj"), Options{CompactInterval: time.Second}, func(string, []byte) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { j.Close() })
			runWriters(b, writers, func(i int) error {
				tk, err := j.Append(journal.Op{Kind: journal.OpSet, Key: fmt.Sprint("group-", i%benchGroups), Value: value})
				if err != nil {
					return err
				}
				return tk.Wait(context.Background())
			})
			b.ReportMetric(float64(j.Stats().SyncCount)/float64(b.N), "fsyncs/op")
		})
	}
}

// BenchmarkBboltBatch is the same workload on bbolt: one key per group,
// written through db.Batch, which coalesces concurrent calls into one
// transaction (one commit = at least two fdatasyncs: data pages, then meta).
// It runs with bbolt's default MaxBatchDelay (10ms, which dominates with one
// writer) and with MaxBatchDelay=0, which gives bbolt its best latency.
func BenchmarkBboltBatch(b *testing.B) {
	value := []byte(strings.Repeat("v", benchValueSize))
	bucket := []byte("groups")
	for _, delay := range []time.Duration{10 * time.Millisecond, 0} {
		for _, writers := range benchWriterCounts {
			b.Run(fmt.Sprintf("delay=%v/writers=%d", delay, writers), func(b *testing.B) {
				benchBbolt(b, delay, writers, bucket, value)
			})
		}
	}
}

func benchBbolt(b *testing.B, delay time.Duration, writers int, bucket, value []byte) {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "state.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	db.MaxBatchDelay = delay
	b.Cleanup(func() { db.Close() })
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket(bucket)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	txid := func() int {
		var id int
		db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil })
		return id
	}
	first := txid()
	runWriters(b, writers, func(i int) error {
		key := []byte(fmt.Sprint("group-", i%benchGroups))
		return db.Batch(func(tx *bolt.Tx) error {
			return tx.Bucket(bucket).Put(key, value)
		})
	})
	b.ReportMetric(float64(txid()-first)/float64(b.N), "commits/op")
}
