package store

import (
	"strings"
	"testing"
	"time"

	"github.com/pushgate/pushgate/internal/storetest"
)

func TestTheLastFailureReasonIsKeptAndRestored(t *testing.T) {
	s := New(Options{})
	k := storetest.Key("job", "j")
	mustPush(t, s, k, Replace, "a 1\n", t0)
	if g := s.Group(k); g.FailureReason() != "" {
		t.Fatalf("FailureReason = %q before any failure", g.FailureReason())
	}
	if err := push(t, s, k, Replace, "a 1 123\n", t0.Add(time.Second)); err == nil {
		t.Fatal("a push with a timestamp was accepted")
	}
	want := s.Group(k).FailureReason()
	if !strings.Contains(want, "timestamps") || strings.Contains(want, "\n") {
		t.Fatalf("FailureReason = %q, want the one-line rejection reason", want)
	}
	// A later successful push keeps the reason with the failure time.
	mustPush(t, s, k, Merge, "b 2\n", t0.Add(2*time.Second))
	if got := s.Group(k).FailureReason(); got != want {
		t.Errorf("FailureReason after a successful push = %q, want %q", got, want)
	}
	r := New(Options{})
	if err := r.Restore(k.ID(), testRecord(t, s.Group(k))); err != nil {
		t.Fatal(err)
	}
	if got := r.Group(k).FailureReason(); got != want {
		t.Errorf("restored FailureReason = %q, want %q", got, want)
	}
}
