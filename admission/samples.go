package admission

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
)

// checkSampleSeries rejects a histogram or summary metric that would expose
// one sample series twice: two buckets with one upper bound (1 and 1.0,
// +Inf twice, NaN twice) or two quantiles with one rank. It puts a
// histogram's buckets in increasing order (sortBuckets), where repeats are
// neighbours. It also rejects
// float histograms, which OpenMetrics 1.0 cannot express: every scrape
// format must be able to render every stored family, decided here at push
// time rather than by whichever format was scraped last.
func checkSampleSeries(typ dto.MetricType, m *dto.Metric) error {
	switch typ {
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		h := m.GetHistogram()
		if isFloatHistogram(h) {
			return fmt.Errorf("float histograms cannot be served as OpenMetrics 1.0, which Prometheus asks for first; push integer counts")
		}
		bs := h.GetBucket()
		sortBuckets(bs)
		for i := 1; i < len(bs); i++ {
			if v := bs[i].GetUpperBound(); compareBuckets(bs[i-1], bs[i]) == 0 {
				return fmt.Errorf("bucket le=%q appears twice", model.FloatString(v).String())
			}
		}
	case dto.MetricType_SUMMARY:
		qs := m.GetSummary().GetQuantile()
		if v, dup := duplicateBound(len(qs), func(i int) float64 { return qs[i].GetQuantile() }); dup {
			return fmt.Errorf("quantile=%q appears twice", model.FloatString(v).String())
		}
	}
	return nil
}

// sortBuckets puts classic buckets in increasing order of upper bound when
// they were pushed in another. Prometheus' protobuf parser stops at the +Inf
// bucket while its text parser takes every line, so a bucket pushed after
// +Inf would be a series in one format and missing in the other; OpenMetrics
// also requires increasing bounds. The series are the same in any order.
func sortBuckets(bs []*dto.Bucket) {
	if slices.IsSortedFunc(bs, compareBuckets) {
		return
	}
	slices.SortStableFunc(bs, compareBuckets)
}

// compareBuckets orders buckets by upper bound (NaN first, and equal to
// itself).
func compareBuckets(a, b *dto.Bucket) int {
	return cmp.Compare(a.GetUpperBound(), b.GetUpperBound())
}

// isFloatHistogram reports whether h holds float counts anywhere.
func isFloatHistogram(h *dto.Histogram) bool {
	if h.GetSampleCountFloat() != 0 || h.GetZeroCountFloat() != 0 || len(h.GetPositiveCount()) > 0 || len(h.GetNegativeCount()) > 0 {
		return true
	}
	for _, b := range h.GetBucket() {
		if b.GetCumulativeCountFloat() != 0 {
			return true
		}
	}
	return false
}

// duplicateBound reports a value that occurs twice among n values (NaN
// equals NaN): a summary's quantiles, which keep their pushed order.
// They almost always come in increasing order, which is checked without
// allocating; otherwise a sorted copy is.
func duplicateBound(n int, at func(int) float64) (float64, bool) {
	increasing := true
	for i := 0; i < n; i++ {
		v := at(i)
		if math.IsNaN(v) || (i > 0 && v <= at(i-1)) {
			increasing = false
			break
		}
	}
	if increasing {
		return 0, false
	}
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = at(i)
	}
	// cmp.Compare orders NaN first and equal to itself.
	slices.SortFunc(vals, cmp.Compare[float64])
	for i := 1; i < n; i++ {
		if cmp.Compare(vals[i], vals[i-1]) == 0 {
			return vals[i], true
		}
	}
	return 0, false
}

// checkReservedLabels rejects labels that would clash with the series a
// summary or histogram expands into.
func checkReservedLabels(typ dto.MetricType, labels []*dto.LabelPair) error {
	var reserved string
	switch typ {
	case dto.MetricType_SUMMARY:
		reserved = "quantile"
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		reserved = "le"
	default:
		return nil
	}
	for _, lp := range labels {
		if lp.GetName() == reserved {
			return fmt.Errorf("a %s must not have an explicit %q label", strings.ToLower(typ.String()), reserved)
		}
	}
	return nil
}
