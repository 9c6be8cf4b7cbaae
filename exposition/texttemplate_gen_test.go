package exposition

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// The text bodies the template tests build templates from and match
// against: generated, kept as lines, with their values replaceable.

// textContentType is the Content-Type the template tests decode with.
const textContentType = "text/plain; version=0.0.4"

// valueKind says how the parser stores a sample value, which decides
// whether the rewrite can store it: any float, a histogram count (bucket
// or _count, stored as an integer only when it is one) or a summary count
// (stored as uint64(v)).
type valueKind int

const (
	kindPlain valueKind = iota + 1
	kindHistogramCount
	kindSummaryCount
)

// genLine is one line of a generated body: a sample line is prefix
// followed by its value token, any other line is prefix alone (kind 0).
// quirk names the rare shape the line has, if any (see textGen).
type genLine struct {
	prefix string
	kind   valueKind
	value  string
	quirk  string
}

// genBody is a generated text body, kept as lines so that its values can
// be replaced without touching anything else.
type genBody struct {
	lines []genLine
}

// bytes renders the body, every line ended by an LF.
func (g genBody) bytes() []byte {
	var b []byte
	for _, l := range g.lines {
		b = append(b, l.prefix...)
		b = append(b, l.value...)
		b = append(b, '\n')
	}
	return b
}

// quirks returns the rare shapes the body holds, each once.
func (g genBody) quirks() []string {
	var q []string
	for _, l := range g.lines {
		if l.quirk != "" && !slices.Contains(q, l.quirk) {
			q = append(q, l.quirk)
		}
	}
	slices.Sort(q)
	return q
}

// values returns the body's value tokens in body order.
func (g genBody) values() []string {
	var vals []string
	for _, l := range g.lines {
		if l.kind != 0 {
			vals = append(vals, l.value)
		}
	}
	return vals
}

// countsStorable reports whether every count token of the body is one the
// rewrite must be able to store: a histogram count that is an integer in
// [0, 2^64), a summary count in [0, 2^64). It is written independently of
// the production code's uint64 round trip.
func (g genBody) countsStorable() bool {
	for _, l := range g.lines {
		if l.kind != kindHistogramCount && l.kind != kindSummaryCount {
			continue
		}
		v, err := parseTextFloat(l.value)
		if err != nil || !(v >= 0 && v < 1<<64) {
			return false
		}
		if l.kind == kindHistogramCount && v != math.Trunc(v) {
			return false
		}
	}
	return true
}

// textGen generates text bodies from its own random source. quirks
// allows rarer shapes the text format accepts: a value right after a
// metric name, a repeated histogram _count line.
type textGen struct {
	r      *rand.Rand
	quirks bool
}

// newTextGen returns a generator seeded with seed.
func newTextGen(seed uint64, quirks bool) *textGen {
	return &textGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), quirks: quirks}
}

// chance reports true with probability p.
func (g *textGen) chance(p float64) bool { return g.r.Float64() < p }

// pick returns a random element of s.
func pick[T any](g *textGen, s []T) T { return s[g.r.IntN(len(s))] }

// plainValues are value tokens the parser takes for any sample.
var plainValues = []string{
	"0", "1", "-1", "42", "-7", "3.14", "-2.5", "1.5e-3", "2E10", "NaN",
	"+Inf", "-Inf", "-0", "1e20", "-1e20", "0.1", ".5", "5.", "+3",
	"1234567890123456789", "4.9e-324", "1.7976931348623157e308", "Inf",
	"nan", "+inf", "0.000001", "-.25", "007",
}

// Histogram count tokens: integers in [0, 2^64), and others.
var (
	goodHistogramCounts = []string{"0", "1", "3", "17", "100", "1e3", "2.0", "-0", "4294967296", "1e19", "9007199254740993"}
	badHistogramCounts  = []string{"2.5", "-1", "NaN", "+Inf", "1e20", "-0.5", "0.1", "18446744073709551616"}
)

// Summary count tokens: in [0, 2^64), and others.
var (
	goodSummaryCounts = []string{"0", "5", "2.5", "1e19", "0.1", "-0", "123456", "7.999"}
	badSummaryCounts  = []string{"-1", "NaN", "+Inf", "1e20", "-Inf", "-3.5", "18446744073709551616"}
)

// value returns a fresh value token of kind k; a count is one the
// rewrite can store.
func (g *textGen) value(k valueKind) string {
	switch k {
	case kindHistogramCount:
		if g.chance(0.5) {
			return strconv.Itoa(g.r.IntN(1_000_000))
		}
		return pick(g, goodHistogramCounts)
	case kindSummaryCount:
		if g.chance(0.5) {
			return strconv.Itoa(g.r.IntN(1_000_000))
		}
		return pick(g, goodSummaryCounts)
	}
	switch g.r.IntN(4) {
	case 0:
		return strconv.FormatFloat(g.r.NormFloat64()*1e3, 'g', -1, 64)
	case 1:
		return strconv.Itoa(g.r.IntN(1_000_000) - 500_000)
	}
	return pick(g, plainValues)
}

// withNewValues returns b with every value token replaced by a fresh one
// of the same kind, and nothing else changed.
func (g *textGen) withNewValues(b genBody) genBody {
	out := genBody{lines: slices.Clone(b.lines)}
	for i := range out.lines {
		if out.lines[i].kind != 0 {
			out.lines[i].value = g.value(out.lines[i].kind)
		}
	}
	g.maybeSpoil(out)
	return out
}

// maybeSpoil sometimes gives one count of b, in place, a value the
// rewrite cannot store: a fractional, negative or huge histogram count,
// or a summary count out of [0, 2^64). One such value among good ones is
// what the rewrite must notice.
func (g *textGen) maybeSpoil(b genBody) {
	if !g.chance(0.1) {
		return
	}
	var counts []int
	for i, l := range b.lines {
		if l.kind == kindHistogramCount || l.kind == kindSummaryCount {
			counts = append(counts, i)
		}
	}
	if len(counts) == 0 {
		return
	}
	l := &b.lines[pick(g, counts)]
	if l.kind == kindHistogramCount {
		l.value = pick(g, badHistogramCounts)
	} else {
		l.value = pick(g, badSummaryCounts)
	}
}

// Name and label material.
var (
	familyPrefixes = []string{"http_requests", "job:rate", "a", "zz_last", "_private", "Duration", "x"}
	labelNames     = []string{"a", "job", "instance", "path", "code", "quantile", "le", "_x", "b2"}
	labelValues    = []string{"", "x", "GET", "/api/v1", "a b", `back\slash`, `say "hi"`, "two\nlines", "é", "{a=1},", "#", `\n`}
	helpTexts      = []string{"Total requests.", `Path with \\ backslash`, `Two\nlines`, `Quotes "are" literal`, `escaped \" quote`, "Ünïcödé", "trailing  "}
	commentLines   = []string{"", "   ", "\t", "# a comment", "#", "# HELP", "# TYPE", `#  free text with "quotes" and \ backslash`, "# EOF"}
)

// escapeLabelValue escapes a label value for the text format.
func escapeLabelValue(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// labelPair is one label of a generated series.
type labelPair struct{ name, value string }

// labelSet returns 0 to 3 labels with distinct names, none named special.
func (g *textGen) labelSet(special string) []labelPair {
	n := g.r.IntN(4)
	var set []labelPair
	for _, k := range g.r.Perm(len(labelNames)) {
		if len(set) == n {
			break
		}
		if name := labelNames[k]; name != special {
			set = append(set, labelPair{name, pick(g, labelValues)})
		}
	}
	return set
}

// labelKey is a label set's identity, its labels in any order.
func labelKey(set []labelPair) string {
	parts := make([]string, len(set))
	for i, l := range set {
		parts[i] = l.name + "\xff" + l.value
	}
	slices.Sort(parts)
	return strings.Join(parts, "\xfe")
}

// sampleLine returns a sample line of metric name with labels set (and,
// when special is set, the label special="bound" somewhere among them)
// and a value of kind k.
func (g *textGen) sampleLine(name string, set []labelPair, special, bound string, k valueKind) genLine {
	labels := slices.Clone(set)
	if special != "" {
		at := g.r.IntN(len(labels) + 1)
		labels = slices.Insert(labels, at, labelPair{special, bound})
	}
	var b strings.Builder
	if g.chance(0.1) {
		b.WriteString(pick(g, []string{" ", "\t"}))
	}
	b.WriteString(name)
	value := g.value(k)
	if len(labels) > 0 || g.chance(0.05) {
		if g.chance(0.1) {
			b.WriteByte(' ')
		}
		b.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				b.WriteString(pick(g, []string{",", ", ", " , "}))
			}
			b.WriteString(l.name)
			b.WriteString(pick(g, []string{"=", "=", " = "}))
			b.WriteString(`"` + escapeLabelValue(l.value) + `"`)
		}
		if len(labels) > 0 && g.chance(0.1) {
			b.WriteByte(',')
		}
		b.WriteByte('}')
		// After the label set no blank is needed.
		b.WriteString(pick(g, []string{" ", " ", " ", "\t", "  ", ""}))
	} else if !g.quirks || k != kindPlain || !strings.ContainsAny(value[:1], "+-.") || !g.chance(0.05) {
		b.WriteString(pick(g, []string{" ", " ", " ", "\t", "  "}))
	} else {
		// The value starts with a byte no name holds, and follows the
		// name directly.
		return genLine{prefix: b.String(), kind: k, value: value, quirk: "value right after the name"}
	}
	return genLine{prefix: b.String(), kind: k, value: value}
}

// seriesSets returns 1 to 3 label sets of one family, all different.
func (g *textGen) seriesSets(special string) [][]labelPair {
	n := 1 + g.r.IntN(3)
	var sets [][]labelPair
	seen := map[string]bool{}
	for range n {
		set := g.labelSet(special)
		if key := labelKey(set); !seen[key] {
			seen[key] = true
			sets = append(sets, set)
		}
	}
	return sets
}

// family returns the lines of one family named name: optional HELP and
// TYPE lines, then its samples, with comments and blank lines mixed in.
func (g *textGen) family(name string) []genLine {
	typ := pick(g, []string{"counter", "gauge", "untyped", "summary", "histogram"})
	var header []genLine
	if g.chance(0.6) {
		header = append(header, genLine{prefix: "# HELP " + name + " " + pick(g, helpTexts)})
	}
	word := ""
	switch typ {
	case "counter", "gauge":
		if g.chance(0.8) {
			word = pick(g, []string{typ, strings.ToUpper(typ)})
		}
	case "untyped":
		if g.chance(0.5) {
			word = typ
		}
	case "summary":
		word = pick(g, []string{"summary", "Summary"})
	case "histogram":
		word = pick(g, []string{"histogram", "HISTOGRAM", "gaugehistogram"})
	}
	if word != "" {
		header = append(header, genLine{prefix: "# TYPE " + name + " " + word})
	}
	if len(header) == 2 && g.chance(0.3) {
		header[0], header[1] = header[1], header[0]
	}

	var samples []genLine
	switch typ {
	case "summary":
		for _, set := range g.seriesSets("quantile") {
			for _, k := range g.r.Perm(5)[:g.r.IntN(4)] {
				q := []string{"0", "0.5", "0.9", "0.99", "1"}[k]
				samples = append(samples, g.sampleLine(name, set, "quantile", q, kindPlain))
			}
			if g.chance(0.85) {
				samples = append(samples, g.sampleLine(name+"_sum", set, "", "", kindPlain))
			}
			if g.chance(0.85) {
				samples = append(samples, g.sampleLine(name+"_count", set, "", "", kindSummaryCount))
			}
		}
	case "histogram":
		bounds := []string{"0.005", "0.1", "0.5", "1", "2.5", "10"}
		for _, set := range g.seriesSets("le") {
			for _, k := range g.r.Perm(len(bounds))[:g.r.IntN(len(bounds)+1)] {
				le := bounds[k]
				if g.chance(0.2) {
					le = strconv.FormatFloat(mustParseFloat(le), 'e', -1, 64)
				}
				samples = append(samples, g.sampleLine(name+"_bucket", set, "le", le, kindHistogramCount))
			}
			if g.chance(0.9) {
				at := g.r.IntN(len(samples) + 1)
				samples = slices.Insert(samples, at, g.sampleLine(name+"_bucket", set, "le", "+Inf", kindHistogramCount))
			}
			if g.chance(0.85) {
				samples = append(samples, g.sampleLine(name+"_sum", set, "", "", kindPlain))
			}
			if g.chance(0.85) {
				if g.quirks && g.chance(0.2) {
					// A repeated _count line: the last one counts.
					l := g.sampleLine(name+"_count", set, "", "", kindHistogramCount)
					l.quirk = "repeated histogram count"
					samples = append(samples, l)
				}
				samples = append(samples, g.sampleLine(name+"_count", set, "", "", kindHistogramCount))
			}
		}
	default:
		for _, set := range g.seriesSets("") {
			samples = append(samples, g.sampleLine(name, set, "", "", kindPlain))
		}
	}
	if g.chance(0.3) {
		g.r.Shuffle(len(samples), func(i, j int) { samples[i], samples[j] = samples[j], samples[i] })
	}
	if g.chance(0.1) && len(samples) > 0 {
		at := g.r.IntN(len(samples))
		samples = slices.Insert(samples, at, genLine{prefix: pick(g, commentLines)})
	}
	return append(header, samples...)
}

// mustParseFloat parses a float the test wrote itself.
func mustParseFloat(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(err)
	}
	return v
}

// body returns a new body of 1 to 5 families in random order.
func (g *textGen) body() genBody {
	var b genBody
	n := 1 + g.r.IntN(5)
	for i := range n {
		if g.chance(0.2) {
			b.lines = append(b.lines, genLine{prefix: pick(g, commentLines)})
		}
		b.lines = append(b.lines, g.family(fmt.Sprintf("%s%d", pick(g, familyPrefixes), i))...)
	}
	g.maybeSpoil(b)
	return b
}
