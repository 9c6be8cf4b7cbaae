package exposition

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/bench/payload"
)

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
		// The same bytes from the first body's skeleton and the value
		// area the template writes (package store keeps a family so).
		if m := checkValueArea(tmpl, i, old[i], vals, want); m != "" {
			res.mismatch = fmt.Sprintf("family %q: %s", names[i], m)
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

// checkValueArea checks that the value area tmpl writes for family i from
// vals, applied to the skeleton of old (the family's bytes from the body
// the template was built from), gives want; it returns what differs, or "".
func checkValueArea(tmpl *TextTemplate, i int, old []byte, vals []float64, want []byte) string {
	skel := bytes.Clone(old)
	if _, ok := ExtractValues(nil, skel); !ok {
		return "ExtractValues refused the first body's bytes"
	}
	area, ok := tmpl.AppendValues(nil, i, vals)
	if !ok {
		return "AppendValues refused values AppendFamily took"
	}
	if got, ok := AppendWithValues(nil, skel, area); !ok || !bytes.Equal(got, want) {
		return fmt.Sprintf("skeleton and area give\n%x (%v)\nwant\n%x", got, ok, want)
	}
	if inPlace := bytes.Clone(skel); ApplyValues(inPlace, area) && !bytes.Equal(inPlace, want) {
		return fmt.Sprintf("skeleton and area give, in place,\n%x\nwant\n%x", inPlace, want)
	}
	return ""
}
