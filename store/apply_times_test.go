package store

import (
	"context"
	"testing"
	"time"

	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/journal"
)

// TestAFollowerWritesTimeFamiliesFromTheGroupItReplaces applies the records
// of a group whose push and failure times change in every way (a push, a
// refused push, a push after it, another failure) and checks, after each,
// that the follower's time families are those a store deriving the record
// afresh builds, served alike, while the follower kept a time family that
// did not change and wrote one whose time did from the family it held.
func TestAFollowerWritesTimeFamiliesFromTheGroupItReplaces(t *testing.T) {
	ctx := context.Background()
	src := New(Options{})
	k := storetest.Key("job", "j")
	steps := []struct {
		name     string
		do       func(at time.Time)
		pushTime bool // the step changes the push time
		failTime bool // the step changes the failure time
	}{
		{"first push", func(at time.Time) { mustPush(t, src, k, Replace, "m{x=\"1\"} 1\n", at) }, true, true},
		{"a push", func(at time.Time) { mustPush(t, src, k, Replace, "m{x=\"1\"} 2\n", at) }, true, false},
		{"a refused push", func(at time.Time) { src.recordFailure(ctx, k, at, "refused") }, false, true},
		{"a push after the failure", func(at time.Time) { mustPush(t, src, k, Replace, "m{x=\"1\"} 3\n", at) }, true, false},
		{"another failure", func(at time.Time) { src.recordFailure(ctx, k, at, "refused again") }, false, true},
	}
	follower := New(Options{})
	for i, st := range steps {
		st.do(t0.Add(time.Duration(i) * time.Minute))
		op := journal.Op{Kind: journal.OpSet, Key: k.ID(), Value: testRecord(t, src.Group(k))}
		var held *Group
		if i > 0 {
			held = follower.committedGroup(op.Key)
		}
		if err := follower.Apply(journal.Position(i+1), []journal.Op{op}); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		fresh := New(Options{})
		fresh.seed = follower.seed
		if err := fresh.Apply(1, []journal.Op{op}); err != nil {
			t.Fatal(err)
		}
		checkRebuiltAlike(t, follower, fresh, op.Key)
		got, want := follower.committedGroup(op.Key), fresh.committedGroup(op.Key)
		for _, name := range []string{PushTimeName, PushFailureTimeName} {
			gf, wf := got.families.get(name), want.families.get(name)
			if gf.lastPush != wf.lastPush || !got.FamilyTime(gf).Equal(want.FamilyTime(wf)) {
				t.Errorf("%s: %s written at %d, derived afresh at %d", st.name, name, gf.lastPush, wf.lastPush)
			}
			if held == nil {
				continue
			}
			hf := held.families.get(name)
			changed := st.pushTime
			if name == PushFailureTimeName {
				changed = st.failTime
			}
			if kept := gf == hf; kept == changed {
				t.Errorf("%s: %s kept from the group replaced: %v, want %v", st.name, name, kept, !changed)
			}
			if &gf.series()[0] != &hf.series()[0] {
				t.Errorf("%s: %s was built anew, not written from the family the follower held", st.name, name)
			}
		}
	}
}
