package otlp

import (
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// slab hands out pointers to values of T allocated in chunks, so that a
// request's thousands of small dto messages cost a few allocations. A chunk
// is never grown in place (that would move the values already handed
// out); a full chunk is left to its holders and a new one started.
type slab[T any] struct {
	buf []T
}

// reserve makes the first chunk hold n values.
func (s *slab[T]) reserve(n int) {
	if n > 0 && s.buf == nil {
		s.buf = make([]T, 0, n)
	}
}

// new returns a pointer to a zero T.
func (s *slab[T]) new() *T {
	if len(s.buf) == cap(s.buf) {
		s.buf = make([]T, 0, max(16, min(2*cap(s.buf), 512)))
	}
	s.buf = s.buf[:len(s.buf)+1]
	return &s.buf[len(s.buf)-1]
}

// run returns a slice of n zero Ts, capped at n so that appending to it
// cannot reach a neighbour's values.
func (s *slab[T]) run(n int) []T {
	if n == 0 {
		return nil
	}
	if cap(s.buf)-len(s.buf) < n {
		s.buf = make([]T, 0, max(n, 16, min(2*cap(s.buf), 512)))
	}
	start := len(s.buf)
	s.buf = s.buf[:start+n]
	return s.buf[start : start+n : start+n]
}

// arena holds the slabs of one translation. The families it builds point
// into it; it is not reused, so nothing it handed out is ever overwritten.
type arena struct {
	strs       slab[string]
	floats     slab[float64]
	uints      slab[uint64]
	pairs      slab[dto.LabelPair]
	pairPtrs   slab[*dto.LabelPair]
	families   slab[familyBuilder]
	metricPtrs slab[*dto.Metric]
	metrics    slab[dto.Metric]
	counters   slab[dto.Counter]
	gauges     slab[dto.Gauge]
	hists      slab[dto.Histogram]
	buckets    slab[dto.Bucket]
	bucketPtr  slab[*dto.Bucket]
	summaries  slab[dto.Summary]
	quantiles  slab[dto.Quantile]
	quantPtrs  slab[*dto.Quantile]
	spans      slab[dto.BucketSpan]
	spanPtrs   slab[*dto.BucketSpan]
	deltas     slab[int64]
	int32s     slab[int32]
	uint32s    slab[uint32]
	times      slab[timestamppb.Timestamp]
}

// str returns a pointer to a copy of s.
func (a *arena) str(s string) *string {
	p := a.strs.new()
	*p = s
	return p
}

// float returns a pointer to a copy of f.
func (a *arena) float(f float64) *float64 {
	p := a.floats.new()
	*p = f
	return p
}

// uint returns a pointer to a copy of u.
func (a *arena) uint(u uint64) *uint64 {
	p := a.uints.new()
	*p = u
	return p
}

// labelPairs returns ls as label pairs, in ls' order.
func (a *arena) labelPairs(ls []label) []*dto.LabelPair {
	ptrs := a.pairPtrs.run(len(ls))
	pairs := a.pairs.run(len(ls))
	for i := range ls {
		pairs[i].Name = a.str(ls[i].name)
		pairs[i].Value = a.str(ls[i].value)
		ptrs[i] = &pairs[i]
	}
	return ptrs
}
