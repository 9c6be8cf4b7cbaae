package exposition

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/bench/payload"
)

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

// decodeTextBody decodes a text body as a push does.
func decodeTextBody(b []byte) (*Decoded, error) {
	return Decode(bytes.NewReader(b), textContentType, DecodeOptions{})
}

// storedFormat is the encoding the store keeps a family in.
func storedFormat() Format { return NewFormat(EncodingProtobuf).WithKnownFields() }

// encodeFamilies returns the stored bytes and the names of families.
func encodeFamilies(t testing.TB, families []*dto.MetricFamily) ([][]byte, []string) {
	t.Helper()
	enc := make([][]byte, len(families))
	names := make([]string, len(families))
	for i, mf := range families {
		b, err := AppendBody(nil, mf, storedFormat())
		if err != nil {
			t.Fatalf("encode family %q: %v", mf.GetName(), err)
		}
		enc[i], names[i] = b, strings.Clone(mf.GetName())
	}
	return enc, names
}

// templateOutcome is how far a pair of bodies went down the template path.
type templateOutcome int

const (
	outcomeNoDecode   templateOutcome = iota // the first body does not decode
	outcomeNoTemplate                        // no template of the first body
	outcomeNoMatch                           // the second body does not match
	outcomeNoRewrite                         // a family was not rewritten
	outcomeRewritten                         // every family was rewritten
)

// templateResult is what checkTemplatePair found: how far the pair got,
// and, when the rewrite succeeded, the first way the rewritten families
// differ from those of the decoded second body ("" when none).
type templateResult struct {
	outcome  templateOutcome
	mismatch string
	// decoded2 reports whether the second body decodes.
	decoded2 bool
	// textWritten and textMissed count the text bodies AppendFamilyText
	// wrote and declined to write.
	textWritten, textMissed int
}

// checkTemplatePair builds a template from b1, matches b2 with it,
// rewrites every family and compares the result with what decoding b2
// stores.
func checkTemplatePair(t testing.TB, b1, b2 []byte) templateResult {
	t.Helper()
	d1, err := decodeTextBody(b1)
	if err != nil {
		return templateResult{outcome: outcomeNoDecode}
	}
	// BuildTextTemplate overwrites the values: encode first.
	old, names := encodeFamilies(t, d1.Families)
	oldText := renderFamilies(d1.Families)
	var sc []byte
	tmpl, ok := BuildTextTemplate(d1, d1.Families, &sc)
	d1.Release()

	var res templateResult
	d2, err2 := decodeTextBody(b2)
	res.decoded2 = err2 == nil
	defer d2.Release()
	if !ok {
		res.outcome = outcomeNoTemplate
		return res
	}
	if tmpl.Families() != len(names) {
		res.outcome = outcomeNoTemplate
		res.mismatch = fmt.Sprintf("template has %d families, body %d", tmpl.Families(), len(names))
		return res
	}
	vals, ok := tmpl.Match(b2, nil)
	if !ok {
		res.outcome = outcomeNoMatch
		return res
	}
	rewritten := make([][]byte, len(names))
	for i := range names {
		if rewritten[i], ok = tmpl.AppendFamily(nil, i, old[i], vals); !ok {
			res.outcome = outcomeNoRewrite
			return res
		}
	}
	res.outcome = outcomeRewritten
	if err2 != nil {
		res.mismatch = fmt.Sprintf("rewritten, but the body does not decode: %v", err2)
		return res
	}
	if len(d2.Families) != len(names) {
		res.mismatch = fmt.Sprintf("rewrote %d families, the body decodes into %d", len(names), len(d2.Families))
		return res
	}
	for i, mf := range d2.Families {
		if mf.GetName() != names[i] || tmpl.FamilyName(i) != names[i] {
			res.mismatch = fmt.Sprintf("family %d: decoded %q, template %q, first body %q", i, mf.GetName(), tmpl.FamilyName(i), names[i])
			return res
		}
		want, err := AppendBody(nil, mf, storedFormat())
		if err != nil {
			t.Fatalf("encode family %q: %v", mf.GetName(), err)
		}
		if !bytes.Equal(rewritten[i], want) {
			res.mismatch = fmt.Sprintf("family %q: rewritten\n%x\ndecoded\n%x", names[i], rewritten[i], want)
			return res
		}
		// The text bodies written from the first body's: those of the
		// second, wherever the first could be rendered.
		for e, enc := range []Encoding{EncodingText, EncodingOpenMetrics} {
			if oldText[i][e] == nil {
				continue
			}
			got, ok := tmpl.AppendFamilyText(nil, i, enc, oldText[i][e], vals)
			if !ok {
				res.textMissed++
				continue
			}
			want, err := AppendBody(nil, mf, NewFormat(enc))
			if err != nil || !bytes.Equal(got, want) {
				res.mismatch = fmt.Sprintf("family %q as %s: written\n%s\nrendered (%v)\n%s", names[i], enc, got, err, want)
				return res
			}
			res.textWritten++
		}
	}
	return res
}

// renderFamilies returns each family's text and OpenMetrics bodies, nil
// where it cannot be rendered.
func renderFamilies(families []*dto.MetricFamily) [][2][]byte {
	out := make([][2][]byte, len(families))
	for i, mf := range families {
		for e, enc := range []Encoding{EncodingText, EncodingOpenMetrics} {
			if b, err := AppendBody(nil, mf, NewFormat(enc)); err == nil {
				out[i][e] = b
			}
		}
	}
	return out
}

func TestTextTemplateRewritesAsTheParserStores(t *testing.T) {
	const cases = 2000
	g := newTextGen(20240611, true)
	var outcomes [outcomeRewritten + 1]int
	failures, plain, plainRewritten, textWritten, textMissed := 0, 0, 0, 0, 0
	byQuirks := map[string]int{}
	for n := range cases {
		c1 := g.body()
		c2 := g.withNewValues(c1)
		b1, b2 := c1.bytes(), c2.bytes()
		res := checkTemplatePair(t, b1, b2)
		outcomes[res.outcome]++
		textWritten += res.textWritten
		textMissed += res.textMissed
		if len(c1.quirks()) == 0 {
			plain++
			if res.outcome == outcomeRewritten {
				plainRewritten++
			}
		}
		fail := func(format string, args ...any) {
			failures++
			quirks := fmt.Sprint(c1.quirks())
			byQuirks[quirks]++
			if failures <= 5 {
				t.Errorf("case %d (quirks %s): %s\nB1:\n%q\nB2:\n%q", n, quirks, fmt.Sprintf(format, args...), b1, b2)
			}
		}
		switch {
		case res.mismatch != "":
			fail("%s", res.mismatch)
		case res.outcome == outcomeNoMatch:
			// Only values differ, and each parses: the match must hold.
			fail("Match refused a body that differs only in its values")
		case res.outcome == outcomeNoRewrite && res.decoded2 && c2.countsStorable():
			// The fast path must not be vacuous.
			fail("AppendFamily refused values the parser stores as integers: %q", c2.values())
		}
	}
	if failures > 5 {
		t.Errorf("%d failing cases in all, the first 5 shown; by the quirks of their bodies: %v", failures, byQuirks)
	}
	t.Logf("of %d cases: B1 refused %d, no template %d, no match %d, no rewrite %d, rewritten %d",
		cases, outcomes[outcomeNoDecode], outcomes[outcomeNoTemplate], outcomes[outcomeNoMatch],
		outcomes[outcomeNoRewrite], outcomes[outcomeRewritten])
	t.Logf("text bodies: %d written from the first body's, %d not", textWritten, textMissed)
	// Families without a _sum or _count line (a fifth of the generated
	// summaries and histograms) have no lines: their renderer writes 0.
	if textWritten < 1000 || textMissed > textWritten/3 {
		t.Errorf("%d text bodies written from the first body's, %d not: too few to test them", textWritten, textMissed)
	}
	// Bodies with a rare shape get no template: the floor counts the
	// others.
	if plainRewritten < plain*8/10 || plain < cases/2 {
		t.Errorf("only %d of %d cases without a rare shape were rewritten, want at least 80%%", plainRewritten, plain)
	}
}

// templateBody is the body the table tests build their template from.
const templateBody = `# HELP req_total Requests "served".
# TYPE req_total counter
req_total{code="200",path="/a"} 10
req_total{code="500",path="/a"} 2
# TYPE lat summary
lat{quantile="0.5"} 0.25
lat_sum 3.5
lat_count 7
# TYPE h histogram
h_bucket{le="1"} 1
h_bucket{le="+Inf"} 3
h_sum 4.5
h_count 3
`

// mustTemplate decodes body and builds its template, and returns it with
// the names and stored bytes of the body's families.
func mustTemplate(t testing.TB, body string) (*TextTemplate, []string, [][]byte) {
	t.Helper()
	d, err := decodeTextBody([]byte(body))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	defer d.Release()
	old, names := encodeFamilies(t, d.Families)
	var sc []byte
	tmpl, ok := BuildTextTemplate(d, d.Families, &sc)
	if !ok {
		t.Fatalf("no template for\n%s", body)
	}
	return tmpl, names, old
}

// sameFloats reports whether a and b hold the same values bit for bit.
func sameFloats(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}

func TestTextTemplateMatchRefusesOtherShapes(t *testing.T) {
	tmpl, _, _ := mustTemplate(t, templateBody)
	if got, ok := tmpl.Match([]byte(templateBody), nil); !ok || !sameFloats(got, []float64{10, 2, 0.25, 3.5, 7, 1, 3, 4.5, 3}) {
		t.Fatalf("Match(its own body) = %v, %v", got, ok)
	}

	replace := func(old, new string) string {
		if !strings.Contains(templateBody, old) {
			t.Fatalf("%q is not in the body", old)
		}
		return strings.Replace(templateBody, old, new, 1)
	}
	refused := []struct {
		name, body string
	}{
		{"changed label value", replace(`code="500"`, `code="501"`)},
		{"added line", replace("lat_sum 3.5\n", "lat_sum 3.5\nlat{quantile=\"0.9\"} 1\n")},
		{"removed line", replace("lat_sum 3.5\n", "")},
		{"trailing space after a value", replace("} 10\n", "} 10 \n")},
		{"trailing tab after a value", replace("} 10\n", "} 10\t\n")},
		{"timestamp after a value", replace("} 10\n", "} 10 1700000000000\n")},
		{"empty value", replace("lat_count 7\n", "lat_count \n")},
		{"value without its blank", replace("lat_count 7\n", "lat_count7\n")},
		{"changed HELP text", replace(`"served".`, `"served"!`)},
		{"CRLF after a value", replace("h_sum 4.5\n", "h_sum 4.5\r\n")},
		{"CRLF after a comment", replace("# TYPE lat summary\n", "# TYPE lat summary\r\n")},
		{"extra trailing newline", templateBody + "\n"},
		{"missing final newline", strings.TrimSuffix(templateBody, "\n")},
		{"non-float value", replace("} 2\n", "} abc\n")},
		{"hexadecimal value", replace("} 2\n", "} 0x1p1\n")},
		{"value with an underscore", replace("} 10\n", "} 1_0\n")},
		{"empty body", ""},
		{"the body twice", templateBody + templateBody},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			if got, ok := tmpl.Match([]byte(c.body), nil); ok {
				t.Errorf("Match(%q) = %v, true; want false", c.body, got)
			}
		})
	}

	t.Run("other values", func(t *testing.T) {
		body := templateBody
		for _, r := range []struct{ old, new string }{
			{"} 10\n", "} NaN\n"},
			{"} 2\n", "} -0\n"},
			{"} 0.25\n", "} +Inf\n"},
			{" 3.5\n", " 1e300\n"},
			{"lat_count 7\n", "lat_count 123456789\n"},
			{"} 1\n", "} 2\n"},
			{"} 3\n", "} 5\n"},
			{" 4.5\n", " -1.5e-3\n"},
			{"h_count 3\n", "h_count 5\n"},
		} {
			if !strings.Contains(body, r.old) {
				t.Fatalf("%q is not in the body", r.old)
			}
			body = strings.Replace(body, r.old, r.new, 1)
		}
		want := []float64{math.NaN(), math.Copysign(0, -1), math.Inf(1), 1e300, 123456789, 2, 5, -1.5e-3, 5}
		prefix := []float64{42}
		got, ok := tmpl.Match([]byte(body), prefix)
		if !ok || !sameFloats(got, append([]float64{42}, want...)) {
			t.Errorf("Match = %v, %v; want %v appended to [42], true", got, ok, want)
		}
	})
}

func TestTextTemplateKeepsNoBodyMemory(t *testing.T) {
	d, err := decodeTextBody([]byte(templateBody))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	old, names := encodeFamilies(t, d.Families)
	var sc []byte
	tmpl, ok := BuildTextTemplate(d, d.Families, &sc)
	if !ok {
		t.Fatal("no template")
	}
	// What the next push does to the borrowed memory: scribble over the
	// body, then hand it back and let other bodies fill it.
	text := d.Text()
	for i := range text {
		text[i] = 'x'
	}
	d.Release()
	others := []string{
		"# TYPE zzz_other_family_with_a_long_name gauge\nzzz_other_family_with_a_long_name{a=\"b\"} 1\n",
		strings.Repeat("q{l=\"vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv\"} 2\n", 40),
		strings.ReplaceAll(templateBody, "lat", "latency_of_another_body"),
	}
	for range 4 {
		for _, o := range others {
			d2, err := decodeTextBody([]byte(o))
			if err != nil {
				t.Fatalf("decode %q: %v", o, err)
			}
			d2.Release()
		}
	}
	// And one left unreleased, holding the pooled memory.
	held, err := decodeTextBody([]byte(others[2]))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	defer held.Release()

	if tmpl.Families() != len(names) {
		t.Fatalf("template has %d families, want %d", tmpl.Families(), len(names))
	}
	for i, name := range names {
		if got := tmpl.FamilyName(i); got != name {
			t.Errorf("FamilyName(%d) = %q, want %q", i, got, name)
		}
	}
	body := strings.Replace(templateBody, "lat_count 7\n", "lat_count 8\n", 1)
	vals, ok := tmpl.Match([]byte(body), nil)
	if !ok || !sameFloats(vals, []float64{10, 2, 0.25, 3.5, 8, 1, 3, 4.5, 3}) {
		t.Fatalf("Match(same shape) = %v, %v", vals, ok)
	}
	d3, err := decodeTextBody([]byte(body))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	defer d3.Release()
	for i, mf := range d3.Families {
		want, err := AppendBody(nil, mf, storedFormat())
		if err != nil {
			t.Fatal(err)
		}
		got, ok := tmpl.AppendFamily(nil, i, old[i], vals)
		if !ok || !bytes.Equal(got, want) {
			t.Errorf("AppendFamily(%d) = %x, %v; want %x", i, got, ok, want)
		}
	}
}

// templateDivergences are bodies B2 that differ from B1 in sample values
// only, match B1's template and are rewritten, yet Decode stores (or
// refuses) them otherwise, because a value decides more than itself:
//   - of two _count lines of one histogram, the first is overwritten, so
//     the template has no slot for it; but the parser still refuses it
//     when negative, and when fractional keeps it as the float count,
//     which makes the whole histogram a float one;
//   - a value that starts with '+', '-' or '.' may follow the metric name
//     with no blank; a new value starting with a digit or letter then
//     extends the name, and the line is refused or names another family.
var templateDivergences = []struct {
	name   string
	b1, b2 string
}{
	{
		name: "repeated histogram count, first one fractional",
		b1:   "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 3\nh_count 3\nh_count 3\n",
		b2:   "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 3\nh_count 2.5\nh_count 3\n",
	},
	{
		name: "repeated histogram count, first one negative",
		b1:   "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 3\nh_count 3\nh_count 3\n",
		b2:   "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 3\nh_count -1\nh_count 3\n",
	},
	{
		name: "value right after the metric name, B2 refused",
		b1:   "a-1\n",
		b2:   "a1\n",
	},
	{
		name: "value right after the metric name, B2 another family",
		b1:   "a-1.5\n",
		b2:   "a2.5\n",
	},
}

// TestTextTemplateDivergences holds the pairs of bodies that once made a
// template store what a parse of the second body would not: now no
// template is built from the first.
func TestTextTemplateDivergences(t *testing.T) {
	for _, c := range templateDivergences {
		t.Run(c.name, func(t *testing.T) {
			res := checkTemplatePair(t, []byte(c.b1), []byte(c.b2))
			if res.mismatch != "" {
				t.Errorf("B1 %q, B2 %q: %s", c.b1, c.b2, res.mismatch)
			}
			if res.outcome != outcomeNoTemplate {
				t.Errorf("B1 %q gave a template", c.b1)
			}
		})
	}
}

// withValues returns b1 with its value tokens, as the parser finds them,
// replaced in turn by the '|'-separated tokens of values (cycled), and
// false when b1 does not decode or has no values.
func withValues(b1 []byte, values string) ([]byte, bool) {
	d, err := decodeTextBody(b1)
	if err != nil {
		return nil, false
	}
	defer d.Release()
	tokens := strings.Split(values, "|")
	if len(d.values) == 0 || len(tokens) == 0 {
		return nil, false
	}
	var b2 []byte
	prev := 0
	for k, r := range d.values {
		b2 = append(b2, b1[prev:r.start]...)
		b2 = append(b2, tokens[k%len(tokens)]...)
		prev = r.end
	}
	return append(b2, b1[prev:]...), true
}

// FuzzTextTemplate holds the template's claim for any body and any new
// values: when a template of the first body matches the second (the first
// with its values replaced by the fuzzed tokens) and rewrites every
// family, parsing the second body stores the same bytes.
func FuzzTextTemplate(f *testing.F) {
	g := newTextGen(7, false)
	for range 24 {
		f.Add(g.body().bytes(), "1|2.5|-0|NaN|+Inf|7e300|3")
	}
	f.Add([]byte(templateBody), "4|0x1|1_0|.5")
	f.Add([]byte("a-1\n"), "1")
	f.Add([]byte("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 3\nh_count 3\nh_count 3\n"), "2.5|-1|3")
	f.Fuzz(func(t *testing.T, b1 []byte, values string) {
		if len(b1) > 4<<10 || len(values) > 256 {
			return
		}
		b2, ok := withValues(b1, values)
		if !ok {
			return
		}
		if res := checkTemplatePair(t, b1, b2); res.mismatch != "" {
			t.Fatalf("B1 %q\nB2 %q\n%s", b1, b2, res.mismatch)
		}
	})
}

func BenchmarkTextTemplate(b *testing.B) {
	b1, b2 := payload.Text(0, 1), payload.Text(0, 2)
	tmpl, names, old := mustTemplate(b, string(b1))
	if _, ok := tmpl.Match(b2, nil); !ok {
		b.Fatal("payload.Text(0, 2) does not match the template of payload.Text(0, 1)")
	}

	b.Run("match+rewrite", func(b *testing.B) {
		var vals []float64
		var dst []byte
		b.ReportAllocs()
		b.SetBytes(int64(len(b2)))
		for b.Loop() {
			var ok bool
			if vals, ok = tmpl.Match(b2, vals[:0]); !ok {
				b.Fatal("no match")
			}
			for i := range names {
				if dst, ok = tmpl.AppendFamily(dst[:0], i, old[i], vals); !ok {
					b.Fatalf("family %q not rewritten", names[i])
				}
			}
		}
	})
	// What the template saves: decoding the body and encoding its
	// families.
	b.Run("decode+encode", func(b *testing.B) {
		var dst []byte
		b.ReportAllocs()
		b.SetBytes(int64(len(b2)))
		for b.Loop() {
			d, err := decodeTextBody(b2)
			if err != nil {
				b.Fatal(err)
			}
			for _, mf := range d.Families {
				if dst, err = AppendBody(dst[:0], mf, storedFormat()); err != nil {
					b.Fatal(err)
				}
			}
			d.Release()
		}
	})
}
