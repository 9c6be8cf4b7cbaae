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

// BenchmarkApplyReplicated measures what a cluster follower spends on one
// replicated push: Apply of one group (the bench payload, as the leader's
// store encoded it) replacing an earlier version in a store of 1,000
// groups.
func BenchmarkApplyReplicated(b *testing.B) {
	const groups = 1000
	src := New(Options{})
	ctx := context.Background()
	t0 := time.Unix(1_700_000_000, 0)
	for i := range groups {
		k := groupkey.New(map[string]string{"job": "bench", "instance": fmt.Sprintf("i%d", i)})
		if _, err := src.Push(ctx, Push{Key: k, Method: Replace, Families: payload.Families(i, 0), Time: t0}); err != nil {
			b.Fatal(err)
		}
	}
	ops := testJournalOps(b, src)
	dst := New(Options{})
	if err := dst.Apply(1, ops); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		op := ops[i%len(ops)]
		if err := dst.Apply(journal.Position(i+2), []journal.Op{op}); err != nil {
			b.Fatal(err)
		}
	}
}
