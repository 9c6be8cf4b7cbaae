package main

import (
	"math"
	"slices"
	"time"
)

// latencies records request durations exactly, up to a limit that the
// caller derives from the run's request limit, so memory stays bounded (8
// bytes per request). Each worker owns one; they are merged at the end. The
// slice grows as needed, because workers share one request budget and a
// fast worker may take more than an even share of it.
type latencies struct {
	samples []time.Duration
	limit   int
	dropped int64
}

// newLatencies returns a recorder that keeps at most limit samples.
func newLatencies(limit int) *latencies {
	return &latencies{samples: make([]time.Duration, 0, min(limit, 4096)), limit: limit}
}

// record keeps d, or counts it as dropped once the limit is reached.
func (l *latencies) record(d time.Duration) {
	if len(l.samples) >= l.limit {
		l.dropped++
		return
	}
	l.samples = append(l.samples, d)
}

// merge combines recorders into one sorted summary.
func merge(ls ...*latencies) summary {
	n := 0
	for _, l := range ls {
		n += len(l.samples)
	}
	all := make([]time.Duration, 0, n)
	var dropped int64
	for _, l := range ls {
		all = append(all, l.samples...)
		dropped += l.dropped
	}
	slices.Sort(all)
	return summary{sorted: all, dropped: dropped}
}

// summary is a sorted set of durations.
type summary struct {
	sorted  []time.Duration
	dropped int64
}

// percentile returns the nearest-rank p-th percentile (0 < p ≤ 100): the
// smallest recorded value such that at least p% of the values are ≤ it. It
// returns 0 when nothing was recorded.
func (s summary) percentile(p float64) time.Duration {
	n := len(s.sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return s.sorted[rank-1]
}

// max returns the largest recorded value, or 0.
func (s summary) max() time.Duration {
	if len(s.sorted) == 0 {
		return 0
	}
	return s.sorted[len(s.sorted)-1]
}

// mean returns the arithmetic mean, or 0.
func (s summary) mean() time.Duration {
	if len(s.sorted) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range s.sorted {
		sum += d
	}
	return sum / time.Duration(len(s.sorted))
}

// ms converts a duration to fractional milliseconds for reports.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
