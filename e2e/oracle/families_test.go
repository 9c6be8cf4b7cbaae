package oracle

import (
	"cmp"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// kind draws the kind of a family called name. Mostly a name keeps one
// type (so that pushes to several groups can agree; a protobuf histogram
// may be native), sometimes it gets any kind.
func (g *generator) kind(name string, proto bool) familyKind {
	n := int(textKinds)
	if proto {
		n = int(numKinds)
	}
	if g.chance(0.2) {
		return familyKind(g.r.IntN(n))
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	k := familyKind(h.Sum32() % uint32(textKinds))
	switch {
	case k == kindHistogram && proto && g.chance(0.6):
		k = pick(g, []familyKind{kindNative, kindNativeFloat, kindNativeAndClassic})
	case proto && g.chance(0.08):
		k = pick(g, []familyKind{kindGaugeHistogram, kindNativeGauge})
	}
	return k
}

// clashesInText reports whether a family name and kind would be read as part
// of another family of the same text body (h_count beside histogram h), or
// the other way round: the text format cannot say which family such a line
// belongs to.
func clashesInText(name string, kind familyKind, fams []*dto.MetricFamily) bool {
	for _, mf := range fams {
		if slices.Contains(sampleNames(mf.GetName(), mf.GetType()), name) ||
			slices.Contains(sampleNames(name, kindType(kind)), mf.GetName()) {
			return true
		}
	}
	return false
}

// sampleNames returns the names of the samples a family writes in the text
// format.
func sampleNames(name string, typ dto.MetricType) []string {
	switch typ {
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		return []string{name + "_bucket", name + "_sum", name + "_count", name}
	case dto.MetricType_SUMMARY:
		return []string{name + "_sum", name + "_count", name}
	}
	return []string{name}
}

// kindType is the protobuf type of a kind.
func kindType(k familyKind) dto.MetricType {
	switch k {
	case kindCounter:
		return dto.MetricType_COUNTER
	case kindGauge:
		return dto.MetricType_GAUGE
	case kindUntyped:
		return dto.MetricType_UNTYPED
	case kindSummary:
		return dto.MetricType_SUMMARY
	case kindGaugeHistogram, kindNativeGauge:
		return dto.MetricType_GAUGE_HISTOGRAM
	}
	return dto.MetricType_HISTOGRAM
}

// family returns a family of name and kind with one to three series, for a
// text body when text is set.
func (g *generator) family(name string, kind familyKind, text bool) *dto.MetricFamily {
	mf := &dto.MetricFamily{Name: proto.String(name), Type: kindType(kind).Enum()}
	if g.chance(0.3) {
		mf.Help = proto.String(pick(g, []string{"help", `a \ backslash`, "two\nlines", "ü"}))
	}
	n := 1 + g.r.IntN(3)
	for i := 0; i < n; i++ {
		m := &dto.Metric{}
		switch {
		case len(mf.Metric) > 0 && g.chance(0.15):
			// The same series as the previous one, once with an empty label
			// (m{a=""} beside m) and once exactly.
			prev := mf.Metric[len(mf.Metric)-1]
			m.Label = slices.Clone(prev.Label)
			if g.chance(0.6) {
				m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(g.labelName()), Value: proto.String("")})
				m.Label = uniqueLabels(m.Label)
			}
		default:
			for j := g.r.IntN(3); j > 0; j-- {
				m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(g.labelName()), Value: proto.String(pick(g, labelValues))})
			}
			m.Label = uniqueLabels(m.Label)
		}
		if kind < textKinds {
			// le on a histogram and quantile on a summary cannot be
			// written in the text format: the line would hold the label
			// twice.
			m.Label = slices.DeleteFunc(m.Label, func(lp *dto.LabelPair) bool {
				return (kind == kindHistogram && lp.GetName() == "le") || (kind == kindSummary && lp.GetName() == "quantile")
			})
		}
		if text && (kind == kindHistogram || kind == kindSummary) && slices.ContainsFunc(mf.Metric, func(o *dto.Metric) bool { return sameLabels(o.Label, m.Label) }) {
			// The text format has no way to write two histograms or
			// summaries with the same labels: their lines make one.
			continue
		}
		g.fill(m, kind)
		if !text && g.chance(0.2) {
			g.exemplar(m)
		}
		mf.Metric = append(mf.Metric, m)
	}
	return mf
}

// sameLabels reports whether two label lists hold the same pairs, in any
// order.
func sameLabels(a, b []*dto.LabelPair) bool {
	key := func(lps []*dto.LabelPair) string {
		var s []string
		for _, lp := range lps {
			s = append(s, lp.GetName()+"\xff"+lp.GetValue())
		}
		slices.Sort(s)
		return strings.Join(s, "\xfe")
	}
	return key(a) == key(b)
}

// uniqueLabels keeps the first label of each name: a metric cannot carry
// one label name twice in either body format.
func uniqueLabels(lps []*dto.LabelPair) []*dto.LabelPair {
	seen := map[string]bool{}
	out := lps[:0:0]
	for _, lp := range lps {
		if !seen[lp.GetName()] {
			seen[lp.GetName()] = true
			out = append(out, lp)
		}
	}
	return out
}

// fill sets the value of m for kind.
func (g *generator) fill(m *dto.Metric, kind familyKind) {
	switch kind {
	case kindCounter:
		m.Counter = &dto.Counter{Value: proto.Float64(pick(g, counterValues))}
	case kindGauge:
		m.Gauge = &dto.Gauge{Value: proto.Float64(pick(g, gaugeValues))}
	case kindUntyped:
		m.Untyped = &dto.Untyped{Value: proto.Float64(pick(g, gaugeValues))}
	case kindSummary:
		m.Summary = g.summary()
	case kindHistogram, kindGaugeHistogram:
		m.Histogram = g.classicHistogram()
	case kindNative, kindNativeGauge:
		m.Histogram = g.nativeHistogram(false)
	case kindNativeFloat:
		m.Histogram = g.nativeHistogram(true)
	case kindNativeAndClassic:
		h := g.nativeHistogram(false)
		c := g.classicHistogram()
		h.Bucket = c.Bucket
		m.Histogram = h
	}
}

// summary returns a summary, sometimes with one rank twice.
func (g *generator) summary() *dto.Summary {
	s := &dto.Summary{SampleCount: proto.Uint64(uint64(g.r.IntN(10))), SampleSum: proto.Float64(float64(g.r.IntN(100)) / 4)}
	var ranks []float64
	for _, q := range quantileRanks {
		if g.chance(0.6) {
			ranks = append(ranks, q)
		}
	}
	switch {
	case len(ranks) > 0 && g.chance(0.12):
		i := g.r.IntN(len(ranks))
		ranks = slices.Insert(ranks, i, ranks[i])
	case g.chance(0.05):
		ranks = append(ranks, math.NaN(), math.NaN())
	}
	for _, q := range ranks {
		s.Quantile = append(s.Quantile, &dto.Quantile{Quantile: proto.Float64(q), Value: proto.Float64(pick(g, gaugeValues))})
	}
	return s
}

// classicHistogram returns a histogram with classic buckets only, sometimes
// with one upper bound twice (+Inf included).
func (g *generator) classicHistogram() *dto.Histogram {
	var bounds []float64
	for _, b := range bucketBounds {
		if g.chance(0.4) {
			bounds = append(bounds, b)
		}
	}
	if g.chance(0.6) {
		bounds = append(bounds, math.Inf(1))
	}
	if len(bounds) > 0 && g.chance(0.12) {
		i := g.r.IntN(len(bounds))
		bounds = slices.Insert(bounds, i, bounds[i])
	}
	h := &dto.Histogram{SampleSum: proto.Float64(float64(g.r.IntN(100)) / 8)}
	var cum uint64
	for _, b := range bounds {
		cum += uint64(g.r.IntN(3))
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(b), CumulativeCount: proto.Uint64(cum)})
	}
	h.SampleCount = proto.Uint64(cum + uint64(g.r.IntN(2)))
	if len(bounds) > 0 && math.IsInf(bounds[len(bounds)-1], 1) {
		h.SampleCount = proto.Uint64(cum)
		if g.chance(0.04) {
			// A bucket after +Inf: Prometheus' protobuf parser stops at
			// +Inf, its text parser does not.
			h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(pick(g, bucketBounds)), CumulativeCount: proto.Uint64(cum)})
		}
	}
	return h
}

// nativeHistogram returns a native histogram with integer or float counts.
func (g *generator) nativeHistogram(float bool) *dto.Histogram {
	h := &dto.Histogram{
		Schema:        proto.Int32(pick(g, []int32{-4, 0, 3, 8})),
		ZeroThreshold: proto.Float64(pick(g, []float64{0, 0.001})),
		SampleSum:     proto.Float64(float64(g.r.IntN(100)) / 8),
	}
	zero := uint64(g.r.IntN(3))
	var total uint64 = zero
	pos := make([]uint64, 1+g.r.IntN(3))
	for i := range pos {
		pos[i] = uint64(g.r.IntN(5))
		total += pos[i]
	}
	h.PositiveSpan = []*dto.BucketSpan{{Offset: proto.Int32(int32(g.r.IntN(5) - 2)), Length: proto.Uint32(uint32(len(pos)))}}
	var neg []uint64
	if g.chance(0.3) {
		neg = []uint64{uint64(1 + g.r.IntN(3))}
		total += neg[0]
		h.NegativeSpan = []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(1)}}
	}
	if float {
		h.ZeroCountFloat = proto.Float64(float64(zero) + 0.5)
		h.SampleCountFloat = proto.Float64(float64(total) + 0.5)
		for _, c := range pos {
			h.PositiveCount = append(h.PositiveCount, float64(c))
		}
		for _, c := range neg {
			h.NegativeCount = append(h.NegativeCount, float64(c))
		}
		return h
	}
	h.ZeroCount = proto.Uint64(zero)
	h.SampleCount = proto.Uint64(total)
	h.PositiveDelta = deltas(pos)
	h.NegativeDelta = deltas(neg)
	return h
}

// deltas returns the delta encoding of absolute bucket counts.
func deltas(counts []uint64) []int64 {
	var out []int64
	var prev int64
	for _, c := range counts {
		out = append(out, int64(c)-prev)
		prev = int64(c)
	}
	return out
}

// exemplarLabelSets are exemplar labels a protobuf push may carry: ones
// every scrape can write, and ones none can (an empty name, two names that
// one escaping makes one, more than OpenMetrics' 128 code points).
var exemplarLabelSets = [][]string{
	{"trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"},
	{"trace.id", "abc", "span_id", "1"},
	{"ü", "x"},
	{"", "empty name"},
	{"a.b", "1", "a_b", "2"},
	{"t", strings.Repeat("x", 130)},
	{},
}

// exemplar gives m's counter, one of its classic buckets or its native
// histogram an exemplar.
func (g *generator) exemplar(m *dto.Metric) {
	pairs := pick(g, exemplarLabelSets)
	e := &dto.Exemplar{Value: proto.Float64(pick(g, gaugeValues))}
	for i := 0; i+1 < len(pairs); i += 2 {
		e.Label = append(e.Label, &dto.LabelPair{Name: proto.String(pairs[i]), Value: proto.String(pairs[i+1])})
	}
	switch {
	case m.Counter != nil:
		m.Counter.Exemplar = e
	case m.Histogram != nil && len(m.Histogram.Bucket) > 0:
		pick(g, m.Histogram.Bucket).Exemplar = e
	case m.Histogram != nil && m.Histogram.Schema != nil:
		e.Timestamp = timestamppb.New(time.Unix(1700000000, 0))
		m.Histogram.Exemplars = append(m.Histogram.Exemplars, e)
	}
}

// garbleOne puts one sequence of invalidUTF8, at a random byte offset (in
// the middle of a multi-byte character too), into one string field of
// fams, for a text body when text is set: a family name, HELP text or (in
// protobuf) unit, a label name or value, or an exemplar label name or
// value. The kind of field is drawn first, so that each is tried about as
// often. The gateway must refuse such a push with 400 and change nothing:
// one such string in a scrape makes Prometheus' parsers refuse the whole
// scrape (a HELP text), or is served as another name.
func (g *generator) garbleOne(fams []*dto.MetricFamily, text bool) {
	garbled := func(s string) *string {
		i := g.r.IntN(len(s) + 1)
		return proto.String(s[:i] + pick(g, invalidUTF8) + s[i:])
	}
	mf := pick(g, fams)
	kinds := []func(){
		func() { mf.Name = garbled(mf.GetName()) },
		func() { mf.Help = garbled(cmp.Or(mf.GetHelp(), "help")) },
	}
	if !text {
		// Only a unit that is not UTF-8, which must be refused: a valid
		// one that is not a suffix of the family name breaks the
		// OpenMetrics scrape, which the gateway does not check yet.
		kinds = append(kinds, func() { mf.Unit = garbled("seconds") })
	}
	var labels, exemplarLabels []*dto.LabelPair
	for _, m := range mf.Metric {
		labels = append(labels, m.Label...)
		if e := m.GetCounter().GetExemplar(); e != nil {
			exemplarLabels = append(exemplarLabels, e.Label...)
		}
		for _, b := range m.GetHistogram().GetBucket() {
			exemplarLabels = append(exemplarLabels, b.GetExemplar().GetLabel()...)
		}
		for _, e := range m.GetHistogram().GetExemplars() {
			exemplarLabels = append(exemplarLabels, e.Label...)
		}
	}
	for _, lps := range [][]*dto.LabelPair{labels, exemplarLabels} {
		if len(lps) > 0 {
			kinds = append(kinds,
				func() { lp := pick(g, lps); lp.Name = garbled(lp.GetName()) },
				func() { lp := pick(g, lps); lp.Value = garbled(lp.GetValue()) })
		}
	}
	pick(g, kinds)()
}
