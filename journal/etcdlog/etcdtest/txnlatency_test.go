package etcdtest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// BenchmarkTxnLatency measures etcd's own commit latency, the floor under a
// durable push in cluster mode: clients goroutines each commit, one after
// the other, a transaction shaped like the leader's (a compare on head's
// mod revision, the put of one s2-compressed bench-payload group and the
// put of head), each client on its own head key, fresh each round, so that the
// guards never fail. With one client this is the latency of the leader's one
// transaction in flight; with several, how etcd batches concurrent
// proposals. It runs against the members named by ETCD_ENDPOINTS
// (comma-separated: real processes, as bench/cluster.sh starts them), or
// else a 3-member embedded cluster. It reports txns/s and the p50/p99 of
// one transaction's round trip.
func BenchmarkTxnLatency(b *testing.B) {
	ops := encodedGroups(b)
	values := make([]string, len(ops))
	for i, op := range ops {
		values[i] = string(s2.Encode(nil, op.Value))
	}
	var endpoints []string
	if e := os.Getenv("ETCD_ENDPOINTS"); e != "" {
		endpoints = strings.Split(e, ",")
	} else {
		endpoints = startCluster(b, 3, nil).endpoints
	}
	client, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { client.Close() })
	for _, clients := range []int{1, 8} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			lat := make([][]time.Duration, clients)
			var mu sync.Mutex
			var failed error
			n := b.N
			prefix := newPrefix() // each round of the benchmark starts from absent heads
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := range clients {
				wg.Go(func() {
					ctx := context.Background()
					head := fmt.Sprintf("%shead-%d", prefix, w)
					var rev int64
					for i := w; i < n; i += clients {
						t := time.Now()
						resp, err := client.Txn(ctx).
							If(clientv3.Compare(clientv3.ModRevision(head), "=", rev)).
							Then(clientv3.OpPut(fmt.Sprintf("%sgroups/g%d", prefix, i%len(values)), values[i%len(values)]),
								clientv3.OpPut(head, "x")).
							Commit()
						if err == nil && !resp.Succeeded {
							err = fmt.Errorf("guard failed at revision %d", rev)
						}
						if err != nil {
							mu.Lock()
							failed = err
							mu.Unlock()
							return
						}
						lat[w] = append(lat[w], time.Since(t))
						rev = resp.Header.Revision
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if failed != nil {
				b.Fatal(failed)
			}
			all := slices.Concat(lat...)
			slices.Sort(all)
			b.ReportMetric(float64(n)/elapsed.Seconds(), "txns/s")
			b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}
