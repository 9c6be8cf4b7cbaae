package exposition

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// familySource turns fuzz bytes into the choices that build a family: each
// read consumes bytes from the front and, once they run out, yields zeros,
// so every input builds some family.
type familySource struct{ b []byte }

// byte returns the next byte, or 0 when the input is exhausted.
func (s *familySource) byte() byte {
	if len(s.b) == 0 {
		return 0
	}
	c := s.b[0]
	s.b = s.b[1:]
	return c
}

// intn returns a choice in [0, n).
func (s *familySource) intn(n int) int { return int(s.byte()) % n }

// pick returns one of options.
func (s *familySource) pick(options []string) string { return options[s.intn(len(options))] }

// str returns a short string taken raw from the input (any bytes, escapes
// and invalid UTF-8 included) or one of options.
func (s *familySource) str(options []string) string {
	if s.intn(4) != 0 {
		return s.pick(options)
	}
	n := s.intn(8)
	if n > len(s.b) {
		n = len(s.b)
	}
	v := string(s.b[:n])
	s.b = s.b[n:]
	return v
}

// renderFloats are the values whose spelling differs most between
// formatters: the spelled-out ones, signed zeros, integers on both sides of
// 1e6 (where 'g' switches to an exponent), extremes and fractions.
var renderFloats = []float64{
	0, math.Copysign(0, -1), 1, -1, 2, -2, 0.5, -0.25, 1e-5, 1e-4, 0.0001234,
	math.NaN(), math.Inf(1), math.Inf(-1),
	999999, -999999, 1e6, -1e6, 1000001, 123456789, 1e15, 1e21, 1e22, 1 << 53, 1<<53 + 2, -(1 << 62),
	math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 5e-324, 1.7976931348623157e308,
	0.1, 0.3, 1.0 / 3, 2.5e-3, 1.7384e9, 123.456, 5.36870912e8,
}

// float returns a value from renderFloats or from 8 raw input bytes.
func (s *familySource) float() float64 {
	if s.intn(3) != 0 {
		return renderFloats[s.intn(len(renderFloats))]
	}
	var raw [8]byte
	for i := range raw {
		raw[i] = s.byte()
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(raw[:]))
}

// count returns an integer count, small or huge.
func (s *familySource) count() uint64 {
	switch s.intn(4) {
	case 0:
		return 0
	case 1:
		return uint64(s.byte())
	case 2:
		return uint64(s.byte())<<24 | uint64(s.byte())<<8 | 7
	default:
		return math.MaxUint64 - uint64(s.byte())
	}
}

var (
	renderNames = []string{
		"x", "http_requests_total", "ns:sub:rate5m", "_under", "a1", "X_Y",
		"my.metric", "1x", "", "naïve", "with space", "q\"uote",
	}
	renderLabelNames = []string{
		"job", "instance", "a", "le", "quantile", "__name__", "_x", "a:b",
		"lab.el", "1a", "", "ü", "back\\slash",
	}
	renderLabelValues = []string{
		"", "v", "orders", "with space", "q\"uote", "back\\slash", "new\nline",
		"\\n", "\"\\\n", "ünïcödé", "\xff\xfe", "{a=\"b\"}", "1e+06",
	}
)

// buildFamily builds a family of any type from data: random names (legacy,
// UTF-8 and invalid), label sets with escapes, special floats, timestamps,
// histograms with and without a +Inf bucket, float counts, native parts,
// summaries, metrics missing their value, and empty families.
func buildFamily(data []byte) *dto.MetricFamily {
	s := &familySource{b: data}
	types := []dto.MetricType{
		dto.MetricType_COUNTER, dto.MetricType_GAUGE, dto.MetricType_SUMMARY,
		dto.MetricType_UNTYPED, dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM,
	}
	mf := &dto.MetricFamily{Name: proto.String(s.str(renderNames))}
	if t := s.intn(len(types) + 1); t < len(types) {
		mf.Type = types[t].Enum()
	} else {
		mf.Type = dto.MetricType(42).Enum() // unknown to expfmt
	}
	if s.intn(2) == 0 {
		mf.Help = proto.String(s.str(renderLabelValues))
	}
	for range s.intn(4) {
		mf.Metric = append(mf.Metric, buildMetric(s, mf.GetType()))
	}
	return mf
}

// buildMetric builds one metric, usually of typ, sometimes of another type
// or with no value at all.
func buildMetric(s *familySource, typ dto.MetricType) *dto.Metric {
	m := &dto.Metric{}
	for range s.intn(4) {
		m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(s.str(renderLabelNames)), Value: proto.String(s.str(renderLabelValues))})
	}
	if s.intn(6) == 0 {
		m.TimestampMs = proto.Int64(int64(s.count()))
	}
	if s.intn(12) == 0 {
		typ = dto.MetricType(s.intn(6))
	}
	if s.intn(16) == 0 {
		return m // no value
	}
	switch typ {
	case dto.MetricType_COUNTER:
		m.Counter = &dto.Counter{Value: proto.Float64(s.float()), Exemplar: buildExemplar(s)}
	case dto.MetricType_GAUGE:
		m.Gauge = &dto.Gauge{Value: proto.Float64(s.float())}
	case dto.MetricType_SUMMARY:
		sum := &dto.Summary{SampleCount: proto.Uint64(s.count()), SampleSum: proto.Float64(s.float())}
		for range s.intn(4) {
			sum.Quantile = append(sum.Quantile, &dto.Quantile{Quantile: proto.Float64(s.float()), Value: proto.Float64(s.float())})
		}
		m.Summary = sum
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		m.Histogram = buildHistogram(s)
	default:
		m.Untyped = &dto.Untyped{Value: proto.Float64(s.float())}
	}
	return m
}

// buildExemplar returns nil, or an exemplar with up to two labels, some
// with names to quote or escape, and sometimes a timestamp, valid or not.
func buildExemplar(s *familySource) *dto.Exemplar {
	if s.intn(3) != 0 {
		return nil
	}
	e := &dto.Exemplar{Value: proto.Float64(s.float())}
	for range s.intn(3) {
		e.Label = append(e.Label, &dto.LabelPair{Name: proto.String(s.str(renderLabelNames)), Value: proto.String(s.str(renderLabelValues))})
	}
	switch s.intn(4) {
	case 0:
		e.Timestamp = &timestamppb.Timestamp{Seconds: int64(s.count() % 4e9), Nanos: int32(s.byte()) * 1e6}
	case 1:
		e.Timestamp = &timestamppb.Timestamp{Seconds: 1, Nanos: -1} // invalid
	}
	return e
}

// buildHistogram builds a classic, native or mixed histogram with integer or
// float counts.
func buildHistogram(s *familySource) *dto.Histogram {
	h := &dto.Histogram{SampleSum: proto.Float64(s.float())}
	if s.intn(3) == 0 {
		h.SampleCountFloat = proto.Float64(s.float())
	}
	if s.intn(4) != 0 {
		h.SampleCount = proto.Uint64(s.count())
	}
	for range s.intn(5) {
		b := &dto.Bucket{UpperBound: proto.Float64(s.float()), CumulativeCount: proto.Uint64(s.count()), Exemplar: buildExemplar(s)}
		if s.intn(4) == 0 {
			b.CumulativeCountFloat = proto.Float64(s.float())
		}
		h.Bucket = append(h.Bucket, b)
	}
	if s.intn(3) == 0 {
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(math.Inf(1)), CumulativeCount: proto.Uint64(s.count())})
	}
	if s.intn(3) == 0 { // native part: expfmt's text format ignores it
		h.Schema = proto.Int32(int32(s.intn(9)) - 4)
		h.ZeroThreshold = proto.Float64(1e-128)
		h.ZeroCount = proto.Uint64(s.count())
		h.PositiveSpan = []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(2)}}
		h.PositiveDelta = []int64{2, -1}
	}
	return h
}

// skipCommentLines drops the leading lines of b that start with '#': the
// HELP, TYPE and UNIT lines of a family rendered by expfmt. Sample lines
// never start with '#', and HELP and UNIT texts have their newlines escaped.
func skipCommentLines(b []byte) []byte {
	for len(b) > 0 && b[0] == '#' {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return nil
		}
		b = b[i+1:]
	}
	return b
}

// expfmtBody renders mf with expfmt in the format ct and drops its HELP,
// TYPE and UNIT lines.
func expfmtBody(mf *dto.MetricFamily, ct expfmt.Format) ([]byte, error) {
	var buf bytes.Buffer
	if err := expfmt.NewEncoder(&buf, ct).Encode(mf); err != nil {
		return nil, err
	}
	return skipCommentLines(buf.Bytes()), nil
}

// textFormats are the text format and OpenMetrics under every escaping
// scheme.
func textFormats() []Format {
	var formats []Format
	for _, media := range []string{"text/plain;version=0.0.4", "application/openmetrics-text;version=1.0.0"} {
		for _, esc := range []string{"allow-utf-8", "underscores", "dots", "values"} {
			formats = append(formats, Negotiate(http.Header{"Accept": {media + ";escaping=" + esc}}))
		}
	}
	return formats
}

// expfmtWritesNamesValidly reports whether expfmt writes every name of mf
// validly in f, so that AppendBody must render it byte for byte as expfmt
// does. expfmt fails on label names holding ':' (it checks them with the
// metric-name rule: written bare under allow-utf-8, never escaped under the
// other schemes), and leaves exemplar label names unescaped.
func expfmtWritesNamesValidly(mf *dto.MetricFamily, f Format) bool {
	invalid := func(labels []*dto.LabelPair, exemplar bool) bool {
		for _, lp := range labels {
			n := lp.GetName()
			switch {
			case f.scheme == model.NoEscaping && legacyName(n) && !legacyLabelName(n):
				return true
			case f.scheme != model.NoEscaping && strings.Contains(n, ":"):
				return true
			case f.scheme != model.NoEscaping && exemplar && n != "" && !legacyLabelName(n):
				return true
			}
		}
		return false
	}
	for _, m := range mf.Metric {
		if invalid(m.Label, false) {
			return false
		}
		if f.Encoding() != EncodingOpenMetrics {
			continue
		}
		if c := m.Counter; c != nil && c.Exemplar != nil && invalid(c.Exemplar.Label, true) {
			return false
		}
		if h := m.Histogram; h != nil {
			for _, b := range h.Bucket {
				if b.Exemplar != nil && invalid(b.Exemplar.Label, true) {
					return false
				}
			}
		}
	}
	return true
}

// checkRenderMatchesExpfmt fails unless, in the text format and OpenMetrics
// under every escaping scheme, AppendBody fails exactly when expfmt fails
// (except that an empty family is no error and renders as nothing), leaves
// dst as it was when it fails, keeps what dst held, and renders mf byte for
// byte as expfmt does. Where expfmt writes a name invalidly, the expected
// bytes are expfmt's rendering of the family escaped by escapeFamily (whose
// names are then all legacy ones, which expfmt writes right), and under
// allow-utf-8 only the failures are compared (TestNamesAreWrittenValidly
// pins the quoting).
func checkRenderMatchesExpfmt(t *testing.T, mf *dto.MetricFamily) {
	t.Helper()
	for _, f := range textFormats() {
		compare := true
		want, wantErr := expfmtBody(mf, expfmt.Format(f.ContentType()))
		if !expfmtWritesNamesValidly(mf, f) {
			if f.scheme == model.NoEscaping {
				compare = false
			} else {
				want, wantErr = expfmtBody(escapeFamily(mf, f.scheme), expfmt.Format(NewFormat(f.Encoding()).ContentType()))
			}
		}
		if len(mf.Metric) == 0 {
			// expfmt refuses a family without metrics; AppendBody
			// renders it as nothing, since a group may hold none.
			want, wantErr = nil, nil
		}
		got, err := AppendBody([]byte("prefix"), mf, f)
		switch {
		case wantErr != nil && err == nil:
			t.Fatalf("%s: AppendBody rendered %q, expfmt fails with %v\nfamily: %v", f, got, wantErr, mf)
		case wantErr == nil && err != nil:
			t.Fatalf("%s: AppendBody fails with %v, expfmt renders %q\nfamily: %v", f, err, want, mf)
		case err != nil && string(got) != "prefix":
			t.Fatalf("%s: AppendBody failed with %v but left %q, want the input unchanged", f, err, got)
		case err == nil && compare && !bytes.Equal(got, append([]byte("prefix"), want...)):
			t.Fatalf("%s: AppendBody differs from expfmt\n got: %q\nwant: prefix%q\nfamily: %v", f, got, want, mf)
		}
	}
}

// renderCases are hand-picked families AppendBody must render as expfmt:
// the encode tests' families, the batch-job payload and edge cases.
func renderCases() map[string]*dto.MetricFamily {
	cases := map[string]*dto.MetricFamily{
		"an empty family":       {Name: proto.String("e"), Type: dto.MetricType_GAUGE.Enum()},
		"a family with no name": {Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(1)}}}},
		"a counter without its value": {Name: proto.String("c_total"), Type: dto.MetricType_COUNTER.Enum(),
			Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(1)}}}},
		"an unknown type": {Name: proto.String("u"), Type: dto.MetricType(42).Enum(),
			Metric: []*dto.Metric{{Untyped: &dto.Untyped{Value: proto.Float64(1)}}}},
		"a legacy family with a colon label name": {Name: proto.String("g"), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Label: []*dto.LabelPair{{Name: proto.String("a:b"), Value: proto.String("v")}}, Gauge: &dto.Gauge{Value: proto.Float64(1)}}}},
		"a sample with a timestamp": {Name: proto.String("t"), Type: dto.MetricType_UNTYPED.Enum(),
			Metric: []*dto.Metric{{Untyped: &dto.Untyped{Value: proto.Float64(2)}, TimestampMs: proto.Int64(-1234)}}},
		"a histogram with only a +Inf bucket": {Name: proto.String("h"), Type: dto.MetricType_HISTOGRAM.Enum(),
			Metric: []*dto.Metric{{Histogram: &dto.Histogram{SampleCount: proto.Uint64(3), SampleSum: proto.Float64(1),
				Bucket: []*dto.Bucket{{UpperBound: proto.Float64(math.Inf(1)), CumulativeCount: proto.Uint64(3)}}}}}},
		"a histogram with +Inf in the middle": {Name: proto.String("h"), Type: dto.MetricType_HISTOGRAM.Enum(),
			Metric: []*dto.Metric{{Histogram: &dto.Histogram{SampleCount: proto.Uint64(3), SampleSum: proto.Float64(1),
				Bucket: []*dto.Bucket{{UpperBound: proto.Float64(math.Inf(1)), CumulativeCount: proto.Uint64(3)}, {UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(1)}}}}}},
		"a histogram with float counts": {Name: proto.String("h"), Type: dto.MetricType_GAUGE_HISTOGRAM.Enum(),
			Metric: []*dto.Metric{{Histogram: &dto.Histogram{SampleCountFloat: proto.Float64(2.5), SampleCount: proto.Uint64(9), SampleSum: proto.Float64(1),
				Bucket: []*dto.Bucket{{UpperBound: proto.Float64(0.5), CumulativeCountFloat: proto.Float64(1.5), CumulativeCount: proto.Uint64(7)}}}}}},
		"a summary without quantiles": {Name: proto.String("s"), Type: dto.MetricType_SUMMARY.Enum(),
			Metric: []*dto.Metric{{Summary: &dto.Summary{}}}},
	}
	for _, tc := range encodeCases() {
		for i, g := range tc.groups {
			cases[fmt.Sprintf("%s, group %d", tc.name, i)] = g
		}
	}
	for _, mf := range batchJobFamilies() {
		cases["batch job "+mf.GetName()] = mf
	}
	return cases
}

func TestRenderMatchesExpfmt(t *testing.T) {
	for name, mf := range renderCases() {
		t.Run(name, func(t *testing.T) { checkRenderMatchesExpfmt(t, mf) })
	}
}

func TestRenderMatchesExpfmtOnGeneratedFamilies(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 14))
	data := make([]byte, 256)
	for i := range 5000 {
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		mf := buildFamily(data)
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkRenderMatchesExpfmt(t, mf) })
	}
}

func TestThePayloadNeedsNoEscaping(t *testing.T) {
	for _, mf := range batchJobFamilies() {
		if !LegacyNames(mf) {
			t.Errorf("family %q would be escaped on every scrape", mf.GetName())
		}
	}
}

func TestRenderingThePayloadDoesNotAllocate(t *testing.T) {
	families := batchJobFamilies()
	buf := make([]byte, 0, 64<<10)
	for _, enc := range []Encoding{EncodingText, EncodingOpenMetrics, EncodingProtobuf} {
		f := NewFormat(enc)
		allocs := testing.AllocsPerRun(100, func() {
			buf = buf[:0]
			for _, mf := range families {
				var err error
				if buf, err = AppendBody(buf, mf, f); err != nil {
					t.Fatal(err)
				}
			}
		})
		if allocs != 0 {
			t.Errorf("rendering the payload in %s allocates %v times, want 0", enc, allocs)
		}
	}
}

func FuzzRenderText(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09"))
	f.Add([]byte("\x04\x01\x02\x03\x03\x01\x02\x00\x05\x06\x07\x08\x09\x0a\x0b"))
	f.Add([]byte("\x02\x00\x03\x02\x02\x04\x05\x06\x00\x01\x02\x03\x04\x05\x06\x07"))
	f.Add([]byte("\x07\x06\x05\x04\x03\x02\x01\x00\xff\xfe\xfd\xfc\xfb\xfa"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRenderMatchesExpfmt(t, buildFamily(data))
	})
}

// BenchmarkTextRender renders the 74-sample batch-job payload families in
// the text format and OpenMetrics with AppendBody and with expfmt (minus the
// header lines, which AppendBody leaves to AppendHeader), side by side.
func BenchmarkTextRender(b *testing.B) {
	families := batchJobFamilies()
	for _, enc := range []Encoding{EncodingText, EncodingOpenMetrics} {
		f := NewFormat(enc)
		b.Run(enc.String(), func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				buf = buf[:0]
				for _, mf := range families {
					buf, _ = AppendBody(buf, mf, f)
				}
			}
			b.SetBytes(int64(len(buf)))
		})
		b.Run(enc.String()+"/expfmt", func(b *testing.B) {
			var buf []byte
			var scratch bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				buf = buf[:0]
				for _, mf := range families {
					scratch.Reset()
					var err error
					if enc == EncodingOpenMetrics {
						_, err = expfmt.MetricFamilyToOpenMetrics(&scratch, mf)
					} else {
						_, err = expfmt.MetricFamilyToText(&scratch, mf)
					}
					if err != nil {
						b.Fatal(err)
					}
					buf = append(buf, skipCommentLines(scratch.Bytes())...)
				}
			}
			b.SetBytes(int64(len(buf)))
		})
	}
}
