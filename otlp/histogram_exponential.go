package otlp

import (
	"fmt"
	"math"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Native histogram schema bounds and the zero threshold Prometheus gives
// every histogram it translates (OTLP's zero_threshold is not read).
const (
	minSchema            = -4
	maxSchema            = 8
	nativeZeroThreshold  = 1e-128
	maxBucketGapInOneRun = 2
)

// exponentialHistograms translates exponential histogram points into
// native histograms, as Prometheus' receiver does: the scale is the
// schema, one above 8 brought down to 8 by merging 2^(scale-8) buckets into
// one, one below -4 refused; the buckets laid out in spans and deltas as
// Prometheus lays them out (see bucketLayout); zero threshold 1e-128; the
// start time as created timestamp and every exemplar, sorted by time.
//
// A point whose bucket counts and zero count exceed its count, or differ
// from it while its sum is a number, is refused: Prometheus' storage
// refuses such a histogram.
func (p *pointContext) exponentialHistograms(pts pmetric.ExponentialHistogramDataPointSlice) {
	a := &p.tr.arena
	for i := 0; i < pts.Len(); i++ {
		pt := pts.At(i)
		// An attribute le stays on Prometheus' native series, but the
		// store refuses it on any histogram (text formats write a native
		// histogram's classic buckets): it is left out, as on classic ones.
		ls, ok := p.begin(pt.Timestamp(), pt.Attributes(), "le", pt.Flags())
		if !ok {
			continue
		}
		scale := pt.Scale()
		if scale < minSchema {
			p.refuse(fmt.Errorf("an exponential histogram point's scale %d is below %d, the smallest Prometheus can store", scale, minSchema))
			continue
		}
		if err := checkExponentialCount(pt); err != nil {
			p.refuse(err)
			continue
		}
		exs, err := p.exemplars(pt.Exemplars())
		if err != nil {
			p.refuse(err)
			continue
		}
		var scaleDown int32
		if scale > maxSchema {
			scaleDown = scale - maxSchema
			scale = maxSchema
		}
		h := a.hists.new()
		h.Schema = a.int32(scale)
		h.ZeroThreshold = a.float(nativeZeroThreshold)
		h.ZeroCount = a.uint(pt.ZeroCount())
		h.SampleCount = a.uint(pt.Count())
		sum := 0.0
		if pt.HasSum() {
			sum = pt.Sum()
		}
		h.SampleSum = a.float(sum)
		h.CreatedTimestamp = p.created(pt.StartTimestamp())
		h.PositiveSpan, h.PositiveDelta = p.tr.bucketLayout(pt.Positive().BucketCounts(), pt.Positive().Offset(), scaleDown)
		h.NegativeSpan, h.NegativeDelta = p.tr.bucketLayout(pt.Negative().BucketCounts(), pt.Negative().Offset(), scaleDown)
		if len(exs) > 0 {
			h.Exemplars = p.sortedByTime(exs)
		}
		m := a.metrics.new()
		m.Histogram = h
		p.tr.add(p.g, p.f, ls, m, p.window(pt.StartTimestamp(), pt.Timestamp()))
	}
}

// checkExponentialCount applies Prometheus' storage check of a native
// histogram's count: the zero count and bucket counts add up to the count,
// or, when the sum is NaN, at most to it.
func checkExponentialCount(pt pmetric.ExponentialHistogramDataPoint) error {
	total := pt.ZeroCount()
	for _, b := range [...]pcommon.UInt64Slice{pt.Positive().BucketCounts(), pt.Negative().BucketCounts()} {
		for j := 0; j < b.Len(); j++ {
			total += b.At(j)
		}
	}
	sum := 0.0
	if pt.HasSum() {
		sum = pt.Sum()
	}
	switch {
	case math.IsNaN(sum) && total > pt.Count():
		return fmt.Errorf("an exponential histogram point's buckets hold %d observations, more than its count %d", total, pt.Count())
	case !math.IsNaN(sum) && total != pt.Count():
		return fmt.Errorf("an exponential histogram point's buckets hold %d observations, not its count %d", total, pt.Count())
	}
	return nil
}

// bucketLayout turns OTLP's dense bucket counts, starting at index offset,
// into a native histogram's spans and deltas, merging 2^scaleDown buckets
// into one. It gives what Prometheus' translator gives, span for span:
// OTLP's bucket i covers (base^i, base^(i+1)] and Prometheus' bucket i+1
// the same range, so indexes shift by one; merged buckets that hold
// nothing are skipped, a gap of up to two buckets is filled with empty
// buckets and a longer one starts a new span; the first span starts at
// the first bucket's index even if that bucket is empty (it may then be
// empty itself), and the last bucket is always written.
func (tr *translation) bucketLayout(counts pcommon.UInt64Slice, offset, scaleDown int32) ([]*dto.BucketSpan, []int64) {
	n := counts.Len()
	if n == 0 {
		return nil, nil
	}
	a := &tr.arena
	type span struct {
		offset int32
		length uint32
	}
	spans := make([]span, 1, 4)
	deltas := tr.deltas[:0]
	var prev int64
	appendDelta := func(c int64) {
		spans[len(spans)-1].length++
		deltas = append(deltas, c-prev)
		prev = c
	}
	idx := offset>>scaleDown + 1
	last := idx - 1
	spans[0].offset = idx
	var count int64
	appendBucket := func() {
		gap := idx - last - 1
		if gap > maxBucketGapInOneRun {
			spans = append(spans, span{offset: gap})
		} else {
			for range gap {
				appendDelta(0)
			}
		}
		appendDelta(count)
		last = idx
	}
	for i := 0; i < n; i++ {
		next := (int32(i)+offset)>>scaleDown + 1
		if next == idx {
			count += int64(counts.At(i))
			continue
		}
		if count != 0 {
			appendBucket()
		}
		count = int64(counts.At(i))
		idx = next
	}
	appendBucket()
	tr.deltas = deltas

	outSpans := a.spanPtrs.run(len(spans))
	for i, s := range spans {
		outSpans[i] = a.span(s.offset, s.length)
	}
	outDeltas := a.deltas.run(len(deltas))
	copy(outDeltas, deltas)
	return outSpans, outDeltas
}

// span returns a bucket span from the slabs.
func (a *arena) span(offset int32, length uint32) *dto.BucketSpan {
	s := a.spans.new()
	s.Offset = a.int32(offset)
	l := a.uint32s.new()
	*l = length
	s.Length = l
	return s
}

// int32 returns a pointer to a copy of v.
func (a *arena) int32(v int32) *int32 {
	p := a.int32s.new()
	*p = v
	return p
}
