package cluster

import (
	"context"
	"testing"
	"time"
)

func TestRetriesStartSoonAndGrowToTheConfiguredPause(t *testing.T) {
	b := newBackoff(500 * time.Millisecond)
	// A context already ended: wait returns at once, having taken its
	// pause.
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	var got []time.Duration
	for range 6 {
		got = append(got, b.next)
		if b.wait(ended) {
			t.Fatal("wait reports an ended context live")
		}
	}
	want := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pauses = %v, want %v", got, want)
		}
	}
	b.reset()
	if b.next != firstRetry {
		t.Errorf("after reset the next pause is %v, want %v", b.next, firstRetry)
	}
	if small := newBackoff(10 * time.Millisecond); small.next != 10*time.Millisecond {
		t.Errorf("a configured pause under %v starts at %v, want the configured one", firstRetry, small.next)
	}
}
