package oracle

import (
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// The pools the generator draws names and values from are small on
// purpose: collisions (the same group twice, names equal after escaping,
// a family's sample names against another family) are what the test is
// after.
var (
	// legacyMetricNames hold pairs that only differ in a suffix a family
	// type adds, and names that escapings of the UTF-8 names produce.
	legacyMetricNames = []string{
		"m", "g", "c", "c_total", "h", "h_bucket", "h_count", "h_sum", "s", "s_sum", "s_count",
		"x", "x_total", "x_created", "x:y", "a_b", "a_dot_b", "U__a_2e_b", "_", "m_x",
	}
	// utf8MetricNames need --push.enable-utf8-names in text bodies.
	utf8MetricNames = []string{"a.b", "m.x", "ü", "😀", "a b", "1x", "h.x", "x.y_total"}
	// legacyLabelNames include the labels the gateway and Prometheus give a
	// meaning to.
	legacyLabelNames = []string{"a", "b", "a_b", "instance", "job", "le", "quantile", "U__a_2e_b", "_", "a_dot_b"}
	// utf8LabelNames: x:y is a valid metric name but not a valid label name.
	utf8LabelNames = []string{"a.b", "x:y", "ü", "😀", "a-b"}
	labelValues    = []string{"", "", "1", "x", "a/b", "ü", `q"uote`, `back\slash`, "line\nbreak", "+", " "}
	pathValues     = []string{"", "1", "x", "a/b", "ü", "+", " ", "%"}
	jobs           = []string{"j1", "j1", "j2", "j/3"}
	gaugeValues    = []float64{0, 1, -1.5, 3.25, 1e-300, 1e300, math.Inf(1), math.Inf(-1), math.NaN(), 42}
	counterValues  = []float64{0, 1, 3.25, 1e300, math.Inf(1), math.NaN(), 42}
	bucketBounds   = []float64{0.1, 0.5, 1, 2.5, 10}
	quantileRanks  = []float64{0.5, 0.9, 0.99}
)

// familyKind is what the generator puts into one family.
type familyKind int

const (
	kindCounter familyKind = iota
	kindGauge
	kindUntyped
	kindHistogram
	kindSummary
	// The kinds below exist only in protobuf bodies.
	kindGaugeHistogram
	kindNative
	kindNativeFloat
	kindNativeAndClassic
	kindNativeGauge
	numKinds
)

// textKinds is the number of kinds the text format can carry.
const textKinds = kindSummary + 1

// generator builds random op sequences from one seed.
type generator struct {
	r *rand.Rand
	// ownNames are the gateway's own metric names, pushed to see that they
	// are refused or kept consistent.
	ownNames []string
	// persistence allows restart ops.
	persistence bool
	// utf8 is the probability of a UTF-8 name where one may stand: small
	// when the gateway refuses them (their pushes are mostly rejected),
	// larger when it takes them.
	utf8 float64
}

// newGenerator returns a generator for seed and the gateway setup cfg.
func newGenerator(seed uint64, ownNames []string, cfg config) *generator {
	g := &generator{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), ownNames: ownNames, persistence: cfg.persistence, utf8: 0.03}
	if cfg.utf8 {
		g.utf8 = 0.15
	}
	return g
}

// pick returns a random element of s.
func pick[T any](g *generator, s []T) T { return s[g.r.IntN(len(s))] }

// chance reports true with probability p.
func (g *generator) chance(p float64) bool { return g.r.Float64() < p }

// sequence returns n ops (checks not counted), with a check every few ops
// and one at the end.
func (g *generator) sequence(n int) []*op {
	var ops []*op
	untilCheck := 1 + g.r.IntN(4)
	for i := 0; i < n; i++ {
		o := g.op()
		if o.kind == opRestart {
			// Checked right before and right after: nothing may change.
			ops = append(ops, g.check(), o, g.check())
			untilCheck = 1 + g.r.IntN(4)
			continue
		}
		ops = append(ops, o)
		untilCheck--
		if untilCheck == 0 {
			ops = append(ops, g.check())
			untilCheck = 1 + g.r.IntN(4)
		}
	}
	return append(ops, g.check())
}

// check returns a check op with a random scrape order.
func (g *generator) check() *op {
	return &op{kind: opCheck, order: g.r.Perm(len(variants))}
}

// op returns one random op other than a check.
func (g *generator) op() *op {
	x := g.r.Float64()
	switch {
	case x < 0.70:
		return g.push()
	case x < 0.80:
		o := g.push()
		return &op{kind: opDelete, path: o.path, key: o.key, keyUTF8: o.keyUTF8}
	case x < 0.82:
		return &op{kind: opWipe}
	case x < 0.87:
		return g.adminDelete()
	case x < 0.93 && g.persistence:
		return &op{kind: opRestart, hard: g.chance(0.5)}
	default:
		return &op{kind: opScrape, variant: pick(g, variants).name}
	}
}

// adminDelete returns an admin delete of one or, sometimes, two selectors.
func (g *generator) adminDelete() *op {
	o := &op{kind: opAdminDelete}
	n := 1
	if g.chance(0.2) {
		n = 2
	}
	for i := 0; i < n; i++ {
		var sel selector
		switch g.r.IntN(4) {
		case 0:
			sel = selector{{"job", pick(g, jobs)}}
		case 1:
			sel = selector{{"job", pick(g, jobs)}, {"a", pick(g, pathValues)}}
		case 2:
			sel = selector{{pick(g, []string{"a", "instance", "a.b"}), ""}}
		default:
			sel = selector{{pick(g, []string{"a", "b", "a.b", "x:y"}), pick(g, pathValues)}}
		}
		var parts []string
		for _, m := range sel {
			parts = append(parts, quoteName(m.name, false)+"="+strconv.Quote(m.value))
		}
		o.match = append(o.match, "{"+strings.Join(parts, ",")+"}")
		o.selectors = append(o.selectors, sel)
	}
	return o
}

// push returns a PUT or POST with a random path and body.
func (g *generator) push() *op {
	o := &op{kind: opPush, method: "PUT"}
	if g.chance(0.5) {
		o.method = "POST"
	}
	g.path(o)
	o.proto = g.chance(0.4)
	o.gzip = g.chance(0.25)
	if g.chance(0.1) {
		return o // empty body
	}
	n := 1 + g.r.IntN(3)
	used := map[string]bool{}
	for i := 0; i < n; i++ {
		name := g.metricName()
		kind := g.kind(name, o.proto)
		if used[name] || (!o.proto && clashesInText(name, kind, o.families)) {
			continue
		}
		used[name] = true
		o.families = append(o.families, g.family(name, kind, !o.proto))
	}
	if !o.proto {
		o.textParts = g.textParts(o.families)
	}
	o.encode()
	return o
}

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

// metricName draws a family name.
func (g *generator) metricName() string {
	switch x := g.r.Float64(); {
	case x < g.utf8:
		return pick(g, utf8MetricNames)
	case x < g.utf8+0.04:
		// The journal's metrics exist only with persistence, and only
		// once the journal is open: they must be reserved all the same.
		return pick(g, journalNames)
	case x < 0.9 || len(g.ownNames) == 0:
		return pick(g, legacyMetricNames)
	default:
		return pick(g, g.ownNames)
	}
}

// labelName draws a body label name.
func (g *generator) labelName() string {
	if g.chance(g.utf8) {
		return pick(g, utf8LabelNames)
	}
	return pick(g, legacyLabelNames)
}

// path sets o.path, o.key and o.keyUTF8 to a random grouping key.
func (g *generator) path(o *op) {
	job := pick(g, jobs)
	if g.chance(0.02) {
		job = ""
	}
	var b strings.Builder
	b.WriteString("/metrics/job")
	g.writePair(&b, "", job)
	o.key = map[string]string{}
	o.keyUTF8 = map[string]string{}
	seen := map[string]bool{}
	for n := g.r.IntN(3); n > 0; n-- {
		var name, written, utf8Name string
		if g.chance(2 * g.utf8) {
			name = pick(g, utf8LabelNames)
			if g.chance(0.7) {
				written = valueEncodeLabelName(name)
				utf8Name = name
			} else {
				written, utf8Name = name, name
			}
		} else {
			name = pick(g, []string{"a", "b", "instance", "a_b", "a", "instance"})
			if g.chance(0.05) {
				name = pick(g, []string{"job", "le", "quantile"})
			}
			written, utf8Name = name, name
		}
		// Once in a while the same name twice (after decoding): 400.
		if seen[utf8Name] && !g.chance(0.1) {
			continue
		}
		seen[utf8Name] = true
		value := pick(g, pathValues)
		g.writePair(&b, written, value)
		// A job pair in the label part is overwritten by the :job segment.
		if utf8Name != "job" {
			o.keyUTF8[utf8Name] = value
		}
		if written != "job" {
			o.key[written] = value
		}
	}
	o.key["job"], o.keyUTF8["job"] = job, job
	o.path = b.String()
}

// writePair appends /name/value (just /value for the job, name "") to b,
// in plain or @base64 form as the value allows.
func (g *generator) writePair(b *strings.Builder, name, value string) {
	base64Form := value == "" || strings.Contains(value, "/") || g.chance(0.3)
	if name != "" {
		b.WriteString("/" + url.PathEscape(name))
	}
	if base64Form {
		if name == "" {
			b.WriteString("@base64")
		} else {
			b.WriteString("@base64")
		}
		enc := base64.URLEncoding.EncodeToString([]byte(value))
		if value == "" {
			enc = "="
		} else if g.chance(0.5) {
			enc = strings.TrimRight(enc, "=")
		}
		b.WriteString("/" + enc)
		return
	}
	b.WriteString("/" + url.PathEscape(value))
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

// textParts writes families in the text format, spelling numbers and names
// in the ways a client may (0.5 or 0.50, quoted UTF-8 names). Element i
// holds family i: its HELP and TYPE lines, then one element per metric.
func (g *generator) textParts(fams []*dto.MetricFamily) [][]string {
	var out [][]string
	for _, mf := range fams {
		var head strings.Builder
		name := mf.GetName()
		if mf.Help != nil {
			fmt.Fprintf(&head, "# HELP %s %s\n", textName(name), escapeHelp(mf.GetHelp()))
		}
		typ := strings.ToLower(mf.GetType().String())
		if mf.GetType() != dto.MetricType_UNTYPED || g.chance(0.5) {
			fmt.Fprintf(&head, "# TYPE %s %s\n", textName(name), typ)
		}
		parts := []string{head.String()}
		for _, m := range mf.Metric {
			var b strings.Builder
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				writeSample(&b, name, m.Label, "", "", m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				writeSample(&b, name, m.Label, "", "", m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				writeSample(&b, name, m.Label, "", "", m.GetUntyped().GetValue())
			case dto.MetricType_SUMMARY:
				for _, q := range m.GetSummary().GetQuantile() {
					writeSample(&b, name, m.Label, "quantile", g.spell(q.GetQuantile()), q.GetValue())
				}
				writeSample(&b, name+"_sum", m.Label, "", "", m.GetSummary().GetSampleSum())
				writeSample(&b, name+"_count", m.Label, "", "", float64(m.GetSummary().GetSampleCount()))
			case dto.MetricType_HISTOGRAM:
				for _, bk := range m.GetHistogram().GetBucket() {
					writeSample(&b, name+"_bucket", m.Label, "le", g.spell(bk.GetUpperBound()), float64(bk.GetCumulativeCount()))
				}
				writeSample(&b, name+"_sum", m.Label, "", "", m.GetHistogram().GetSampleSum())
				writeSample(&b, name+"_count", m.Label, "", "", float64(m.GetHistogram().GetSampleCount()))
			}
			parts = append(parts, b.String())
		}
		out = append(out, parts)
	}
	return out
}

// spell writes a bucket bound or quantile rank in one of its spellings.
func (g *generator) spell(v float64) string {
	s := formatFloat(v)
	if math.IsInf(v, 1) || math.IsNaN(v) || !g.chance(0.4) {
		return s
	}
	if !strings.ContainsAny(s, ".e") {
		return s + ".0"
	}
	if strings.Contains(s, ".") && !strings.Contains(s, "e") {
		return s + "0"
	}
	return s
}

// formatFloat writes v as the text format does.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// textName writes a metric name in a HELP or TYPE line.
func textName(name string) string {
	if legacyMetricName(name) {
		return name
	}
	return `"` + escapeLabelValue(name) + `"`
}

// writeSample writes one sample line; extraName, extraValue is le or
// quantile when set.
func writeSample(b *strings.Builder, name string, lps []*dto.LabelPair, extraName, extraValue string, v float64) {
	var parts []string
	quoted := !legacyMetricName(name)
	if quoted {
		parts = append(parts, `"`+escapeLabelValue(name)+`"`)
	}
	for _, lp := range lps {
		parts = append(parts, labelText(lp.GetName())+`="`+escapeLabelValue(lp.GetValue())+`"`)
	}
	if extraName != "" {
		parts = append(parts, extraName+`="`+extraValue+`"`)
	}
	if !quoted {
		b.WriteString(name)
	}
	if len(parts) > 0 {
		b.WriteString("{" + strings.Join(parts, ",") + "}")
	}
	b.WriteString(" " + formatFloat(v) + "\n")
}

// labelText writes a label name, quoted when it is not a legacy name.
func labelText(name string) string {
	if legacyLabelName(name) {
		return name
	}
	return `"` + escapeLabelValue(name) + `"`
}

// escapeLabelValue escapes \, " and line feeds.
func escapeLabelValue(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// escapeHelp escapes \ and line feeds.
func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}
