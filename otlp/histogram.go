package otlp

import (
	"fmt"
	"math"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// histograms translates explicit-bucket histogram points into classic
// histograms, as Prometheus' receiver writes them: a bucket per explicit
// bound with the cumulative count up to it (an explicit +Inf bound is left
// out: the +Inf bucket is the point's count), the sum when the point has
// one, the count, the start time as created timestamp. Exemplars go to the
// buckets as Prometheus assigns them: taken in their order, each to the
// first bound not below its value, the rest to +Inf (a bucket keeps the
// latest of its own; a delta point's +Inf exemplar is kept beside its
// buckets until the sum is served: see servedClassic).
//
// A point is refused when its bucket counts do not match its bounds (one
// more count than bounds, or neither), its bounds are not increasing, or
// its bucket counts do not add up to its count: the gateway could not
// serve it as one valid histogram.
func (p *pointContext) histograms(pts pmetric.HistogramDataPointSlice) {
	a := &p.tr.arena
	for i := 0; i < pts.Len(); i++ {
		pt := pts.At(i)
		ls, ok := p.begin(pt.Timestamp(), pt.Attributes(), "le", pt.Flags())
		if !ok {
			continue
		}
		if err := checkExplicitBuckets(pt); err != nil {
			p.refuse(err)
			continue
		}
		exs, err := p.exemplars(pt.Exemplars())
		if err != nil {
			p.refuse(err)
			continue
		}
		bounds, counts := pt.ExplicitBounds(), pt.BucketCounts()
		n := bounds.Len()
		if n > 0 && math.IsInf(bounds.At(n-1), 1) {
			n--
		}
		h := a.hists.new()
		h.SampleCount = a.uint(pt.Count())
		if pt.HasSum() {
			h.SampleSum = a.float(pt.Sum())
		}
		h.CreatedTimestamp = p.created(pt.StartTimestamp())
		// A +Inf bucket is written only to carry exemplars (the count is
		// its value), and never for a delta point: the delta's buckets
		// must be its bounds', so that points add up bucket by bucket.
		infExemplars := len(exs) > 0 && !p.f.delta
		nb := n
		if infExemplars {
			nb++
		}
		h.Bucket = a.bucketPtr.run(nb)[:n]
		bs := a.buckets.run(nb)
		var cum uint64
		next := 0
		for j := 0; j < n; j++ {
			b := &bs[j]
			bound := bounds.At(j)
			cum += counts.At(j)
			b.UpperBound = a.float(bound)
			b.CumulativeCount = a.uint(cum)
			first := next
			for next < len(exs) && !(exs[next].value > bound) {
				next++
			}
			if next > first {
				b.Exemplar = p.dtoExemplar(p.tr.t.latest(exs[first:next]))
			}
			h.Bucket[j] = b
		}
		if infExemplars && next < len(exs) {
			b := &bs[n]
			b.UpperBound = a.float(math.Inf(1))
			b.CumulativeCount = a.uint(pt.Count())
			b.Exemplar = p.dtoExemplar(p.tr.t.latest(exs[next:]))
			h.Bucket = append(h.Bucket, b)
		}
		if p.f.delta && next < len(exs) {
			// A delta point's +Inf exemplar waits in the exemplar list
			// (unused by a classic histogram) until the sum is served
			// (servedClassic), so that its buckets stay its bounds'.
			h.Exemplars = []*dto.Exemplar{p.dtoExemplar(p.tr.t.latest(exs[next:]))}
		}
		m := a.metrics.new()
		m.Histogram = h
		p.tr.add(p.g, p.f, ls, m, p.window(pt.StartTimestamp(), pt.Timestamp()))
	}
}

// checkExplicitBuckets reports what makes a point's buckets unservable.
func checkExplicitBuckets(pt pmetric.HistogramDataPoint) error {
	bounds, counts := pt.ExplicitBounds(), pt.BucketCounts()
	if !(counts.Len() == 0 && bounds.Len() == 0) && counts.Len() != bounds.Len()+1 {
		return fmt.Errorf("a histogram point has %d bucket counts for %d explicit bounds (want one more count than bounds)", counts.Len(), bounds.Len())
	}
	for j := 0; j < bounds.Len(); j++ {
		b := bounds.At(j)
		if math.IsNaN(b) {
			return fmt.Errorf("a histogram point has a NaN bucket bound")
		}
		if j > 0 && !(b > bounds.At(j-1)) {
			return fmt.Errorf("a histogram point's bucket bounds are not increasing (%g after %g)", b, bounds.At(j-1))
		}
	}
	var sum uint64
	for j := 0; j < counts.Len(); j++ {
		sum += counts.At(j)
	}
	if counts.Len() > 0 && sum != pt.Count() {
		return fmt.Errorf("a histogram point's bucket counts add up to %d, not to its count %d", sum, pt.Count())
	}
	return nil
}
