package oracle

import (
	"encoding/base64"
	"math"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
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
	// invalidUTF8 are byte sequences that are not UTF-8: stray
	// continuation bytes, a lead byte cut short, overlong and surrogate
	// encodings, a code point past U+10FFFF, and 0x83 0xE8, found in a HELP
	// text that made Prometheus refuse every scrape.
	invalidUTF8 = []string{"\x83", "\xff", "\x83\xe8", "\xe2\x82", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80"}
)

// badUTF8Pushes is the share of pushes with one string that is not UTF-8
// (see garbleOne).
const badUTF8Pushes = 0.08

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
	if len(o.families) > 0 && g.chance(badUTF8Pushes) {
		g.garbleOne(o.families, !o.proto)
	}
	if !o.proto {
		o.textParts = g.textParts(o.families)
	}
	o.encode()
	return o
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
		b.WriteString("@base64")
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
