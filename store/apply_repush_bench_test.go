package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/journal"
)

// BenchmarkApplyRepush measures what a cluster follower spends on the
// common replicated push: a batch job re-pushing its group with new values
// and the same label sets. Each op is the record the leader wrote for one
// push of the bench payload, applied over the group's previous push in a
// store of 1,000 groups; consecutive applies of a group alternate between
// two pushes, so every applied record has values and a push time the
// store does not hold. It reports the process's CPU time per apply
// (cpu-ns/op) beside the wall time.
func BenchmarkApplyRepush(b *testing.B) {
	const groups = 1000
	src := New(Options{})
	ctx := context.Background()
	t0 := time.Unix(1_700_000_000, 0)
	keys := make([]groupkey.Key, groups)
	var records [3][][]byte
	for v := range records {
		records[v] = make([][]byte, groups)
		for i := range keys {
			if v == 0 {
				keys[i] = groupkey.New(map[string]string{"job": "bench", "instance": fmt.Sprintf("i%d", i)})
			}
			at := t0.Add(time.Duration(v) * time.Minute)
			if _, err := src.Push(ctx, Push{Key: keys[i], Method: Replace, Families: payload.Families(i, v), Time: at}); err != nil {
				b.Fatal(err)
			}
			records[v][i] = testRecord(b, src.Group(keys[i]))
		}
	}
	dst := New(Options{})
	for i, k := range keys {
		if err := dst.Apply(journal.Position(i+1), []journal.Op{{Kind: journal.OpSet, Key: k.ID(), Value: records[0][i]}}); err != nil {
			b.Fatal(err)
		}
	}
	pos := journal.Position(groups)
	b.ReportAllocs()
	stop := reportCPUPerOp(b)
	b.ResetTimer()
	for i := range b.N {
		g, v := i%groups, 1+(i/groups)%2
		pos++
		if err := dst.Apply(pos, []journal.Op{{Kind: journal.OpSet, Key: keys[g].ID(), Value: records[v][g]}}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	stop()
}
