package store

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/pushgate/pushgate/exposition"
)

// This file is the one place that says what a series is (DESIGN §5): the
// rules Prometheus applies when it ingests a scrape, which every check of
// the store uses.
//
//   - A series is a metric name and its labels, an empty label value being
//     the same as an absent label (seriesHash).
//   - A classic histogram or summary is its sample series: one bucket per
//     upper bound and one quantile per rank, compared as numbers
//     (duplicateBound), besides _sum and _count.
//   - A family exposes names beyond its own: the sample names of its type and
//     its OpenMetrics family name (claims). Two families of different names
//     must not expose one name, under any escaping a scrape can ask for.
//   - Label names must stay distinct under every escaping (labelKey).

// seriesHash hashes a metric name and its sorted labels, leaving out labels
// with an empty value: m{a=""} and m are one series to Prometheus.
func seriesHash(h *maphash.Hash, name string, labels []*dto.LabelPair) uint64 {
	h.Reset()
	h.WriteString(name)
	for _, lp := range labels {
		hashLabel(h, lp.GetName(), lp.GetValue())
	}
	return h.Sum64()
}

// hashLabel adds one label of a series to h, nothing when its value is
// empty. seriesHash and the restore path (storedFamily) both use it, so a
// series hashes alike however it was read.
func hashLabel[S string | []byte](h *maphash.Hash, name, value S) {
	if len(value) == 0 {
		return
	}
	h.WriteByte(0xff)
	h.Write([]byte(name))
	h.WriteByte(0xff)
	h.Write([]byte(value))
}

// checkSampleSeries rejects a histogram or summary metric that would expose
// one sample series twice: two buckets with one upper bound (1 and 1.0,
// +Inf twice, NaN twice) or two quantiles with one rank. It puts a
// histogram's buckets in increasing order (sortBuckets). It also rejects
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
		if v, dup := duplicateBound(len(bs), func(i int) float64 { return bs[i].GetUpperBound() }); dup {
			return fmt.Errorf("bucket le=%q appears twice", model.FloatString(v).String())
		}
		sortBuckets(bs)
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

// compareBuckets orders buckets by upper bound (NaN first).
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
// equals NaN). Buckets and quantiles almost always come in increasing
// order, which is checked without allocating; otherwise a sorted copy is.
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

// claimSchemes returns the escapings whose names the store must keep apart.
// Under the legacy name rules every stored name is a legacy name, which
// every escaping leaves as it is: the names themselves are enough.
func claimSchemes(utf8Names bool) []model.EscapingScheme {
	if utf8Names {
		return exposition.EscapingSchemes[:]
	}
	return exposition.EscapingSchemes[:1]
}

// claims returns every name a family of name and typ exposes in a scrape
// under the given escapings, each prefixed by the scheme's byte: the escaped
// name, the sample names of its type (text and OpenMetrics), and its
// OpenMetrics family name, a counter X_total being the family X with the
// sample X_total. Two families of different names whose claims meet would
// show one series or one family twice. X_created is not claimed: the
// gateway never writes created samples, and Python's client pushes every
// counter, summary and histogram X with a gauge X_created beside it.
func claims(name string, typ dto.MetricType, schemes []model.EscapingScheme) []string {
	out := make([]string, 0, 6*len(schemes))
	for _, s := range schemes {
		p := string(rune('0' + s))
		e := exposition.EscapeMetricName(name, s)
		out = append(out, p+e)
		fam := e
		var suffixes []string
		switch typ {
		case dto.MetricType_COUNTER:
			if base, ok := strings.CutSuffix(e, "_total"); ok && base != "" {
				fam = base
				out = append(out, p+fam)
			}
			suffixes = []string{"_total"}
		case dto.MetricType_SUMMARY:
			suffixes = []string{"_sum", "_count"}
		case dto.MetricType_HISTOGRAM:
			suffixes = []string{"_bucket", "_sum", "_count"}
		case dto.MetricType_GAUGE_HISTOGRAM:
			suffixes = []string{"_bucket", "_sum", "_count", "_gsum", "_gcount"}
		}
		for _, suf := range suffixes {
			if c := p + fam + suf; !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// describeClaim words a claim for a reason: the name, and the escaping it
// is written under when that is not the name itself.
func describeClaim(c string) string {
	s := model.EscapingScheme(c[0] - '0')
	if s == model.NoEscaping {
		return fmt.Sprintf("%q", c[1:])
	}
	return fmt.Sprintf("%q under escaping=%s", c[1:], s)
}

// labelSchemes are the escapings under which two label names can become
// one (without escaping they are themselves).
var labelSchemes = exposition.EscapingSchemes[1:]

// labelKey is a label name as one escaping writes it, prefixed by the
// scheme's byte.
func labelKey(name string, s model.EscapingScheme) string {
	return string(rune('0'+s)) + exposition.EscapeLabelName(name, s)
}

// checkLabelNameEscapes rejects a UTF-8 label name that the underscores
// escaping (what Prometheus 2 and every legacy scraper asks for) turns into
// a name starting with "__", which Prometheus reserves and drops. Dots
// escaping is not checked: it writes every name that starts with a
// character outside [a-zA-Z] that way ("über" as "__ber"), and refusing
// those would refuse most non-Latin label names for a scheme few scrapers
// ask for.
func checkLabelNameEscapes(metric, name string) error {
	if model.LegacyValidation.IsValidLabelName(name) {
		return nil
	}
	for _, s := range []model.EscapingScheme{model.UnderscoreEscaping} {
		e := exposition.EscapeLabelName(name, s)
		if !strings.HasPrefix(e, "__") {
			continue
		}
		if metric == "" {
			return fmt.Errorf("grouping label name %q is written %q under escaping=%s, a name Prometheus reserves", name, e, s)
		}
		return fmt.Errorf("metric %q: label name %q is written %q under escaping=%s, a name Prometheus reserves", metric, name, e, s)
	}
	return nil
}

// familyLabelNames returns the distinct label names of mf's metrics,
// sorted.
func familyLabelNames(mf *dto.MetricFamily) []string {
	var names []string
	for _, m := range mf.GetMetric() {
		for _, lp := range m.GetLabel() {
			if !slices.Contains(names, lp.GetName()) {
				names = append(names, lp.GetName())
			}
		}
	}
	slices.Sort(names)
	return names
}
