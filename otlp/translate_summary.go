package otlp

import (
	"fmt"
	"math"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// summaries translates summary points into summaries, as Prometheus'
// receiver writes them: sum, count, one quantile per quantile value, the
// start time as created timestamp. A point that gives one quantile twice
// is refused: its two values would be one series.
func (p *pointContext) summaries(pts pmetric.SummaryDataPointSlice) {
	a := &p.tr.arena
	for i := 0; i < pts.Len(); i++ {
		pt := pts.At(i)
		ls, ok := p.begin(pt.Timestamp(), pt.Attributes(), "quantile", pt.Flags())
		if !ok {
			continue
		}
		qs := pt.QuantileValues()
		if err := checkQuantiles(qs); err != nil {
			p.refuse(err)
			continue
		}
		s := a.summaries.new()
		s.SampleCount = a.uint(pt.Count())
		s.SampleSum = a.float(pt.Sum())
		s.CreatedTimestamp = p.created(pt.StartTimestamp())
		if n := qs.Len(); n > 0 {
			s.Quantile = a.quantPtrs.run(n)
			vals := a.quantiles.run(n)
			for j := range n {
				q := qs.At(j)
				vals[j].Quantile = a.float(q.Quantile())
				vals[j].Value = a.float(q.Value())
				s.Quantile[j] = &vals[j]
			}
		}
		m := a.metrics.new()
		m.Summary = s
		p.tr.add(p.g, p.f, ls, m, nil)
	}
}

// checkQuantiles refuses a quantile given twice (NaN included, as the
// store compares them).
func checkQuantiles(qs pmetric.SummaryDataPointValueAtQuantileSlice) error {
	for j := 1; j < qs.Len(); j++ {
		q := qs.At(j).Quantile()
		for k := 0; k < j; k++ {
			if o := qs.At(k).Quantile(); o == q || math.IsNaN(o) && math.IsNaN(q) {
				return fmt.Errorf("a summary point gives quantile %g twice", q)
			}
		}
	}
	return nil
}
