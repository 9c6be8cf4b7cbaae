package otlp

import (
	"math"
	"slices"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// isNative reports whether h is a native (exponential) histogram: it has
// a schema and no classic buckets.
func isNative(h *dto.Histogram) bool {
	return h.Schema != nil && len(h.Bucket) == 0
}

// addClassic adds the explicit-bucket delta p to the sum h, bucket by
// bucket, and reports false (h unchanged) when their bounds differ.
func addClassic(h, p *dto.Histogram) bool {
	if len(h.Bucket) != len(p.Bucket) {
		return false
	}
	for i, b := range h.Bucket {
		if b.GetUpperBound() != p.Bucket[i].GetUpperBound() {
			return false
		}
	}
	for i, b := range h.Bucket {
		b.CumulativeCount = proto.Uint64(b.GetCumulativeCount() + p.Bucket[i].GetCumulativeCount())
		if e := p.Bucket[i].Exemplar; e != nil {
			b.Exemplar = e
		}
	}
	addCountSum(h, p)
	if len(p.Exemplars) > 0 {
		// The +Inf exemplar: the latest point's, or the last one seen.
		h.Exemplars = append(h.Exemplars[:0], p.Exemplars...)
	}
	return true
}

// servedClassic turns a summed classic histogram's +Inf exemplar, kept in
// its exemplar list while summing (the buckets must stay the points'
// bounds to add up), into the +Inf bucket that carries it when served, as
// a cumulative point's is. m is the served copy.
func servedClassic(m *dto.Metric) {
	h := m.Histogram
	if h == nil || isNative(h) || len(h.Exemplars) == 0 {
		return
	}
	h.Bucket = append(h.Bucket, &dto.Bucket{
		UpperBound:      proto.Float64(math.Inf(1)),
		CumulativeCount: proto.Uint64(h.GetSampleCount()),
		Exemplar:        h.Exemplars[len(h.Exemplars)-1],
	})
	h.Exemplars = nil
}

// addCountSum adds p's count and sum to h's.
func addCountSum(h, p *dto.Histogram) {
	h.SampleCount = proto.Uint64(h.GetSampleCount() + p.GetSampleCount())
	h.SampleSum = proto.Float64(h.GetSampleSum() + p.GetSampleSum())
}

// addNative adds the native delta p to the native sum h at the lower of
// their schemas, and reports false (h unchanged) when their zero buckets
// differ in width or either holds float counts.
func addNative(h, p *dto.Histogram) bool {
	if h.GetZeroThreshold() != p.GetZeroThreshold() || floatCounts(h) || floatCounts(p) {
		return false
	}
	schema := min(h.GetSchema(), p.GetSchema())
	pos := bucketCounts(h.PositiveSpan, h.PositiveDelta, h.GetSchema(), schema)
	neg := bucketCounts(h.NegativeSpan, h.NegativeDelta, h.GetSchema(), schema)
	for i, c := range bucketCounts(p.PositiveSpan, p.PositiveDelta, p.GetSchema(), schema) {
		pos[i] += c
	}
	for i, c := range bucketCounts(p.NegativeSpan, p.NegativeDelta, p.GetSchema(), schema) {
		neg[i] += c
	}
	h.Schema = proto.Int32(schema)
	h.PositiveSpan, h.PositiveDelta = spansDeltas(pos)
	h.NegativeSpan, h.NegativeDelta = spansDeltas(neg)
	h.ZeroCount = proto.Uint64(h.GetZeroCount() + p.GetZeroCount())
	addCountSum(h, p)
	if len(p.Exemplars) > 0 {
		h.Exemplars = append(h.Exemplars[:0], p.Exemplars...)
	}
	return true
}

// floatCounts reports whether h counts in floats (not what a translated
// OTLP histogram holds).
func floatCounts(h *dto.Histogram) bool {
	return h.GetSampleCountFloat() > 0 || h.GetZeroCountFloat() > 0 || len(h.PositiveCount) > 0 || len(h.NegativeCount) > 0
}

// bucketCounts returns the absolute count of each bucket of spans and
// deltas (schema from), by bucket index at schema to (to <= from). Going
// down one schema merges each pair of buckets: bucket i of the finer one
// falls in bucket ((i-1)>>1)+1 of the coarser, and so on per step.
func bucketCounts(spans []*dto.BucketSpan, deltas []int64, from, to int32) map[int32]uint64 {
	out := map[int32]uint64{}
	shift := uint(from - to)
	var idx int32
	var count int64
	d := 0
	for si, s := range spans {
		if si == 0 {
			idx = s.GetOffset()
		} else {
			idx += s.GetOffset()
		}
		for j := uint32(0); j < s.GetLength() && d < len(deltas); j++ {
			count += deltas[d]
			d++
			if count > 0 {
				out[((idx-1)>>shift)+1] += uint64(count)
			}
			idx++
		}
	}
	return out
}

// spansDeltas encodes absolute bucket counts as spans and deltas, empty
// buckets between two filled ones inside a span when the gap is at most
// 2 (as compact as starting a new span).
func spansDeltas(counts map[int32]uint64) ([]*dto.BucketSpan, []int64) {
	if len(counts) == 0 {
		return nil, nil
	}
	idx := make([]int32, 0, len(counts))
	for i, c := range counts {
		if c > 0 {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	var (
		spans  []*dto.BucketSpan
		deltas []int64
		prev   int64
		next   int32
	)
	for k, i := range idx {
		switch {
		case k == 0:
			spans = append(spans, &dto.BucketSpan{Offset: proto.Int32(i), Length: proto.Uint32(0)})
		case i-next <= 2:
			for ; next < i; next++ {
				deltas = append(deltas, -prev)
				prev = 0
				*spans[len(spans)-1].Length++
			}
		default:
			spans = append(spans, &dto.BucketSpan{Offset: proto.Int32(i - next), Length: proto.Uint32(0)})
		}
		c := int64(counts[i])
		deltas = append(deltas, c-prev)
		prev = c
		*spans[len(spans)-1].Length++
		next = i + 1
	}
	return spans, deltas
}
