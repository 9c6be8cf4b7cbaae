package main

import (
	"testing"
	"time"
)

func TestPercentileIsNearestRank(t *testing.T) {
	l := newLatencies(100)
	for i := 100; i >= 1; i-- { // recorded out of order on purpose
		l.record(time.Duration(i) * time.Millisecond)
	}
	s := merge(l)
	tests := []struct {
		p    float64
		want time.Duration
	}{
		{50, 50 * time.Millisecond},
		{90, 90 * time.Millisecond},
		{99, 99 * time.Millisecond},
		{99.9, 100 * time.Millisecond},
		{100, 100 * time.Millisecond},
		{0.1, 1 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := s.percentile(tt.p); got != tt.want {
			t.Errorf("percentile(%v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if s.max() != 100*time.Millisecond {
		t.Errorf("max = %v, want 100ms", s.max())
	}
	if got, want := s.mean(), 50500*time.Microsecond; got != want {
		t.Errorf("mean = %v, want %v", got, want)
	}
}

func TestPercentileOfFewSamples(t *testing.T) {
	a, b := newLatencies(2), newLatencies(1)
	a.record(3 * time.Millisecond)
	a.record(1 * time.Millisecond)
	b.record(2 * time.Millisecond)
	s := merge(a, b)
	if got := s.percentile(50); got != 2*time.Millisecond {
		t.Errorf("p50 of {1,2,3} ms = %v, want 2ms", got)
	}
	if got := s.percentile(99); got != 3*time.Millisecond {
		t.Errorf("p99 of {1,2,3} ms = %v, want 3ms", got)
	}
}

func TestEmptySummaryIsZero(t *testing.T) {
	s := merge(newLatencies(0))
	if s.percentile(50) != 0 || s.max() != 0 || s.mean() != 0 {
		t.Errorf("empty summary gave non-zero figures: %v %v %v", s.percentile(50), s.max(), s.mean())
	}
}

func TestRecorderStopsAtItsCapacity(t *testing.T) {
	l := newLatencies(3)
	for range 5 {
		l.record(time.Millisecond)
	}
	if len(l.samples) != 3 || l.dropped != 2 {
		t.Errorf("kept %d, dropped %d; want 3 and 2", len(l.samples), l.dropped)
	}
	if merge(l).dropped != 2 {
		t.Error("merge lost the dropped count")
	}
}
