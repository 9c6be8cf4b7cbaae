package store

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/journal"
)

// pushState pushes text to k by POST, giving each named family a state.
func pushState(t *testing.T, s *Store, k Push, text string, states map[string][]byte) error {
	t.Helper()
	k.Method, k.Families, k.States = Merge, storetest.Families(t, text), states
	if k.Time.IsZero() {
		k.Time = t0
	}
	_, err := s.Push(context.Background(), k)
	return err
}

// stateOf returns family name's state in the head of group k.
func stateOf(s *Store, k Push, name string) []byte {
	states, _ := s.HeadStates(k.Key)
	return states[name]
}

func TestAFamilyStateLivesAsLongAsTheFamily(t *testing.T) {
	s := New(Options{})
	g := Push{Key: storetest.Key("job", "a")}
	if err := pushState(t, s, g, "# TYPE c counter\nc 1\n", map[string][]byte{"c": []byte("one")}); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(s, g, "c"); string(got) != "one" {
		t.Fatalf("state %q, want one", got)
	}
	mustPush(t, s, g.Key, Merge, "other 1\n", t0)
	if got := stateOf(s, g, "c"); string(got) != "one" {
		t.Errorf("after a merge of another family: state %q, want one kept", got)
	}
	mustPush(t, s, g.Key, Merge, "# TYPE c counter\nc 5\n", t0)
	if got := stateOf(s, g, "c"); got != nil {
		t.Errorf("after a plain push of the family: state %q, want none", got)
	}
	if err := pushState(t, s, g, "# TYPE c counter\nc 1\n", map[string][]byte{"c": []byte("two")}); err != nil {
		t.Fatal(err)
	}
	mustPush(t, s, g.Key, Replace, "other 1\n", t0)
	if got := stateOf(s, g, "c"); got != nil {
		t.Errorf("after a PUT: state %q, want none", got)
	}
	if err := pushState(t, s, g, "# TYPE c counter\nc 1\n", map[string][]byte{"c": []byte("three")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(context.Background(), g.Key); err != nil {
		t.Fatal(err)
	}
	if states, _ := s.HeadStates(g.Key); states != nil {
		t.Errorf("after a DELETE: states %q, want none", states)
	}
}

func TestAPushExpectingAHeadThatChangedFailsAndChangesNothing(t *testing.T) {
	// Two writers sum deltas into one series: both read the head, both
	// add 1 to what they read. Without the precondition both pushes land
	// and the sum is 1 instead of 2.
	s := New(Options{})
	g := Push{Key: storetest.Key("job", "a")}
	if err := pushState(t, s, g, "# TYPE c counter\nc 0\n", map[string][]byte{"c": {0}}); err != nil {
		t.Fatal(err)
	}
	statesA, headA := s.HeadStates(g.Key)
	statesB, headB := s.HeadStates(g.Key)
	add := func(states map[string][]byte, head Head) error {
		next := []byte{states["c"][0] + 1}
		p := g
		p.Expect = &head
		return pushState(t, s, p, "# TYPE c counter\nc 1\n", map[string][]byte{"c": next})
	}
	if err := add(statesA, headA); err != nil {
		t.Fatalf("first writer: %v", err)
	}
	if err := add(statesB, headB); !errors.Is(err, ErrHeadChanged) {
		t.Fatalf("second writer on a stale head: err = %v, want ErrHeadChanged", err)
	}
	if got := stateOf(s, g, "c"); !bytes.Equal(got, []byte{1}) {
		t.Fatalf("state %v after the refused push, want [1]", got)
	}
	statesB, headB = s.HeadStates(g.Key)
	if err := add(statesB, headB); err != nil {
		t.Fatalf("second writer after reading again: %v", err)
	}
	if got := stateOf(s, g, "c"); !bytes.Equal(got, []byte{2}) {
		t.Errorf("state %v, want [2]: both additions", got)
	}
}

func TestAnAbsentGroupsHeadHoldsUntilTheGroupIsCreated(t *testing.T) {
	s := New(Options{})
	g := Push{Key: storetest.Key("job", "a")}
	_, head := s.HeadStates(g.Key)
	mustPush(t, s, g.Key, Merge, "x 1\n", t0)
	p := g
	p.Expect = &head
	if err := pushState(t, s, p, "y 1\n", nil); !errors.Is(err, ErrHeadChanged) {
		t.Errorf("err = %v, want ErrHeadChanged", err)
	}
}

func TestAPendingChangeIsTheHeadAWriterMustExpect(t *testing.T) {
	s := New(Options{})
	log := &heldLog{}
	s.SetJournal(log)
	g := Push{Key: storetest.Key("job", "a")}
	_, before := s.HeadStates(g.Key)
	done := make(chan error, 1)
	go func() {
		_, err := s.Push(context.Background(), Push{Key: g.Key, Method: Merge, Families: storetest.Families(t, "x 1\n"), Time: t0})
		done <- err
	}()
	c := log.appended(t, 1)
	p := g
	p.Expect = &before
	if err := pushState(t, s, p, "y 1\n", nil); !errors.Is(err, ErrHeadChanged) {
		t.Errorf("expecting the committed state while a change is pending: err = %v, want ErrHeadChanged", err)
	}
	c.done <- nil
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestFamilyStatesSurviveTheJournalAndTheLog(t *testing.T) {
	writer := New(Options{})
	log := &recordingLog{}
	writer.SetJournal(log)
	g := Push{Key: storetest.Key("job", "a")}
	if err := pushState(t, writer, g, "# TYPE c counter\nc 3\nplain 1\n", map[string][]byte{"c": []byte("summed windows")}); err != nil {
		t.Fatal(err)
	}
	// A restart: the journal's records restored into a fresh store.
	restored := New(Options{})
	for _, op := range testJournalOps(t, writer) {
		if err := restored.Restore(op.Key, op.Value); err != nil {
			t.Fatal(err)
		}
	}
	// A follower: the log's batches applied.
	follower := New(Options{})
	for i, ops := range log.batches {
		if err := follower.Apply(journal.Position(i+1), ops); err != nil {
			t.Fatal(err)
		}
	}
	for name, s := range map[string]*Store{"restored": restored, "follower": follower} {
		states, _ := s.HeadStates(g.Key)
		if string(states["c"]) != "summed windows" || len(states) != 1 {
			t.Errorf("%s store: states %q, want c's alone", name, states)
		}
	}
}
