package store

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/journal"
)

// recordingLog commits every batch at once and keeps it, for a follower to
// apply.
type recordingLog struct {
	mu      sync.Mutex
	batches [][]journal.Op
}

type doneCommit journal.Position

func (c doneCommit) Wait(context.Context) error { return nil }
func (c doneCommit) Position() journal.Position { return journal.Position(c) }

func (l *recordingLog) Append(ops ...journal.Op) (journal.Commit, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.batches = append(l.batches, append([]journal.Op(nil), ops...))
	return doneCommit(len(l.batches)), nil
}

func TestAFollowerApplyingTheLogServesWhatTheWriterServes(t *testing.T) {
	ctx := context.Background()
	writer, follower := New(Options{}), New(Options{})
	log := &recordingLog{}
	writer.SetJournal(log)
	mustPush(t, writer, storetest.Key("job", "a"), Replace, "a 1\n", t0)
	mustPush(t, writer, storetest.Key("job", "b", "instance", "x"), Replace, "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n", t0)
	mustPush(t, writer, storetest.Key("job", "a"), Merge, "c 2\n", t0.Add(time.Second))
	if err := push(t, writer, storetest.Key("job", "a"), Replace, "a 1 123\n", t0.Add(2*time.Second)); err == nil {
		t.Fatal("a timestamped push was accepted")
	}
	if _, err := writer.Delete(ctx, storetest.Key("job", "b", "instance", "x")); err != nil {
		t.Fatal(err)
	}
	mustPush(t, writer, storetest.Key("job", "d"), Replace, "d 4\n", t0)
	if _, _, err := writer.DeleteWhere(ctx, func(g *Group) bool { return g.Key().String() == `{job="d"}` }, false); err != nil {
		t.Fatal(err)
	}
	mustPush(t, writer, storetest.Key("job", "e"), Replace, "e 5\n", t0)
	for i, ops := range log.batches {
		if err := follower.Apply(journal.Position(i+1), ops); err != nil {
			t.Fatalf("apply batch %d: %v", i+1, err)
		}
	}
	if got, want := follower.Applied(), journal.Position(len(log.batches)); got != want {
		t.Errorf("Applied = %d, want %d", got, want)
	}
	for _, enc := range []exposition.Encoding{exposition.EncodingText, exposition.EncodingOpenMetrics, exposition.EncodingProtobuf} {
		if w, f := scrapeBytes(t, writer, enc), scrapeBytes(t, follower, enc); !bytes.Equal(w, f) {
			t.Errorf("%s: the follower serves\n%s\nthe writer\n%s", enc, f, w)
		}
	}
	if _, err := writer.Wipe(ctx); err != nil {
		t.Fatal(err)
	}
	last := log.batches[len(log.batches)-1]
	if err := follower.Apply(journal.Position(len(log.batches)), last); err != nil {
		t.Fatal(err)
	}
	if n := len(follower.Groups()); n != 0 {
		t.Errorf("%d groups after the wipe was applied", n)
	}
	if follower.ApplyConflicts() != 0 {
		t.Errorf("ApplyConflicts = %d, want 0", follower.ApplyConflicts())
	}
}

func TestAConflictingAppliedChangeIsAppliedAndCounted(t *testing.T) {
	a, b := New(Options{}), New(Options{})
	mustPush(t, a, storetest.Key("job", "x"), Replace, "m{instance=\"i\"} 1\n", t0)
	mustPush(t, b, storetest.Key("job", "x", "instance", "i"), Replace, "m 2\n", t0)
	follower := New(Options{})
	for i, g := range []*Group{a.Group(storetest.Key("job", "x")), b.Group(storetest.Key("job", "x", "instance", "i"))} {
		op := journal.Op{Kind: journal.OpSet, Key: g.Key().ID(), Value: testRecord(t, g)}
		if err := follower.Apply(journal.Position(i+1), []journal.Op{op}); err != nil {
			t.Fatal(err)
		}
	}
	if len(follower.Groups()) != 2 {
		t.Errorf("the conflicting change was skipped: %d groups", len(follower.Groups()))
	}
	if follower.ApplyConflicts() != 1 {
		t.Errorf("ApplyConflicts = %d, want 1", follower.ApplyConflicts())
	}
}

func TestAnAppliedGroupKeepsNoReferenceToTheOpsValues(t *testing.T) {
	writer, follower := New(Options{}), New(Options{})
	log := &recordingLog{}
	writer.SetJournal(log)
	mustPush(t, writer, storetest.Key("job", "a", "instance", "x"), Replace,
		"# HELP a Help.\n# TYPE a counter\na{l=\"v\"} 1\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n", t0)
	for i, ops := range log.batches {
		if err := follower.Apply(journal.Position(i+1), ops); err != nil {
			t.Fatalf("apply batch %d: %v", i+1, err)
		}
	}
	// A follower's log reuses the values' memory for its next batch.
	for _, ops := range log.batches {
		for _, op := range ops {
			for i := range op.Value {
				op.Value[i] = 'X'
			}
		}
	}
	for _, enc := range []exposition.Encoding{exposition.EncodingText, exposition.EncodingOpenMetrics, exposition.EncodingProtobuf} {
		if w, f := scrapeBytes(t, writer, enc), scrapeBytes(t, follower, enc); !bytes.Equal(w, f) {
			t.Errorf("%s: the follower serves\n%s\nthe writer\n%s", enc, f, w)
		}
	}
}
