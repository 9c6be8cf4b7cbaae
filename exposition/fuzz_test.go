package exposition_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/store"
)

// fuzzProtoType is the Content-Type of a delimited protobuf push.
const fuzzProtoType = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"

// FuzzDecodeText checks the text body decoder: see checkDecode.
func FuzzDecodeText(f *testing.F) {
	for _, seed := range []string{
		"m 1\n",
		"# HELP m Help with \\\\ and \\n escapes.\n# TYPE m counter\nm{a=\"1\",b=\"\\\"q\\\"\"} 1\nm{a=\"2\"} NaN\n",
		"# TYPE g gauge\ng +Inf\ng{x=\"y\"} -Inf\n",
		"# TYPE h histogram\nh_bucket{le=\"0.5\"} 1\nh_bucket{le=\"+Inf\"} 3\nh_sum 2\nh_count 3\n",
		"# TYPE s summary\ns{quantile=\"0.5\"} 1\ns_sum 3\ns_count 9\n",
		"m 1 1000\n",
		"m 1",
		"m 1\r\n",
		"m x\n",
		"m{a=\"\xff\"} 1\n",
		"# HELP m \xff\xfe\nm 1\n",
		"# HELP m Requests hand\x83\xe8led.\n# TYPE m counter\nm 1\n",
		"# HELP \"m.x\" \x83\xe8\n{\"m.x\"} 1\n",
		"# HELP y \x83\xe8\nm 1\n",
		"{\"m\x83\"} 1\n",
		"m{\"a\x83\"=\"1\"} 1\n",
		"{\"m.x\", \"a.b\"=\"c\"} 1\n",
		"m{a=\"1\",a=\"2\"} 1\n",
		"m 1\nm 2\n",
		"# TYPE m gauge\n# TYPE m counter\nm 1\n",
		"# EOF\n",
		"",
		"\n\n\n",
		"m{} 1\n",
		"m{a=\"1\",} 1\n",
		"m 0x1p-2\n",
		"# TYPE h histogram\nh_bucket 1\n",
		"# TYPE h histogram\nh_bucket{le=\"x\"} 1\n",
		"# TYPE s summary\ns{quantile=\"a\"} 1\n",
		strings.Repeat("m{a=\"1\"} 1\n", 50),
	} {
		f.Add([]byte(seed), false, uint16(1))
		f.Add([]byte(seed), true, uint16(6))
	}
	f.Fuzz(func(t *testing.T, body []byte, utf8Names bool, limit uint16) {
		checkDecode(t, body, "text/plain; version=0.0.4", utf8Names, limit)
	})
}

// FuzzDecodeProtobuf checks the delimited protobuf body decoder: see
// checkDecode.
func FuzzDecodeProtobuf(f *testing.F) {
	seeds := [][]*dto.MetricFamily{
		{{Name: proto.String("m"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(math.NaN())}}}}},
		{{Name: proto.String("c_total"), Help: proto.String("h\n\\"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
			{Label: []*dto.LabelPair{{Name: proto.String("a"), Value: proto.String("1")}}, Counter: &dto.Counter{Value: proto.Float64(1)}},
			{Label: []*dto.LabelPair{{Name: proto.String("a"), Value: proto.String("2")}}, Counter: &dto.Counter{Value: proto.Float64(math.Inf(-1))}},
		}}},
		{{Name: proto.String("h"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{Histogram: &dto.Histogram{
			SampleCount: proto.Uint64(3), SampleSum: proto.Float64(1.5),
			Bucket: []*dto.Bucket{{UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(2)}},
		}}}}},
		{{Name: proto.String("nh"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{Histogram: &dto.Histogram{
			SampleCount: proto.Uint64(4), SampleSum: proto.Float64(2), Schema: proto.Int32(3), ZeroThreshold: proto.Float64(1e-128),
			ZeroCount: proto.Uint64(1), PositiveSpan: []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(2)}}, PositiveDelta: []int64{1, 1},
		}}}}},
		{{Name: proto.String("fh"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{Histogram: &dto.Histogram{
			SampleCountFloat: proto.Float64(2.5), SampleSum: proto.Float64(2), Schema: proto.Int32(0),
			ZeroCountFloat: proto.Float64(0.5), NegativeSpan: []*dto.BucketSpan{{Offset: proto.Int32(-1), Length: proto.Uint32(1)}}, NegativeCount: []float64{2},
		}}}}},
		{{Name: proto.String("s"), Type: dto.MetricType_SUMMARY.Enum(), Metric: []*dto.Metric{{Summary: &dto.Summary{
			SampleCount: proto.Uint64(2), SampleSum: proto.Float64(-1),
			Quantile: []*dto.Quantile{{Quantile: proto.Float64(0.5), Value: proto.Float64(math.NaN())}},
		}}}}},
		{{Name: proto.String("gh"), Type: dto.MetricType_GAUGE_HISTOGRAM.Enum(), Metric: []*dto.Metric{{Histogram: &dto.Histogram{
			SampleCount: proto.Uint64(1), SampleSum: proto.Float64(1),
			Bucket: []*dto.Bucket{{UpperBound: proto.Float64(math.Inf(1)), CumulativeCount: proto.Uint64(1)}},
		}}}}},
		{{Name: proto.String("u"), Metric: []*dto.Metric{{Untyped: &dto.Untyped{Value: proto.Float64(7)}}}}},
		{{Name: proto.String("m.dotted"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{
			Label: []*dto.LabelPair{{Name: proto.String("la.bel"), Value: proto.String("v")}}, Gauge: &dto.Gauge{Value: proto.Float64(1)}}}}},
		{{Name: proto.String("m"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(1)}}}},
			{Name: proto.String("m"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{{Counter: &dto.Counter{Value: proto.Float64(2)}}}}},
		{{Name: proto.String("m"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Counter: &dto.Counter{Value: proto.Float64(1)}}}}},
		{{Name: proto.String("m"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(1)}, Counter: &dto.Counter{Value: proto.Float64(1)}}}}},
		{{Name: proto.String("m"), Type: dto.MetricType(42).Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(1)}}}}},
		{{Name: proto.String("m"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{TimestampMs: proto.Int64(5), Gauge: &dto.Gauge{Value: proto.Float64(1)}}}}},
		{{Name: proto.String("m"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{
			Label: []*dto.LabelPair{{Name: proto.String("a"), Value: proto.String("\xff")}}, Gauge: &dto.Gauge{Value: proto.Float64(1)}}}}},
		{{Name: proto.String("m"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{
			Label: []*dto.LabelPair{{Name: proto.String("__name__"), Value: proto.String("x")}}, Gauge: &dto.Gauge{Value: proto.Float64(1)}}}}},
		{{Name: proto.String("empty")}},
		{{Name: proto.String("pb_bad_\x83name"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(1)}}}}},
		{{Name: proto.String("m"), Help: proto.String("hand\x83\xe8led"), Unit: proto.String("s\xff"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(1)}}}}},
		{{Name: proto.String("m"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{
			Label: []*dto.LabelPair{{Name: proto.String("a\xff"), Value: proto.String("v")}}, Gauge: &dto.Gauge{Value: proto.Float64(1)}}}}},
		{{Name: proto.String("c_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{{Counter: &dto.Counter{Value: proto.Float64(1), Exemplar: &dto.Exemplar{
			Value: proto.Float64(1), Label: []*dto.LabelPair{{Name: proto.String("trace_id"), Value: proto.String("\x83\xe8")}}}}}}}},
		{{Name: proto.String(""), Metric: []*dto.Metric{{Untyped: &dto.Untyped{Value: proto.Float64(1)}}}}},
	}
	for i, mfs := range seeds {
		var b bytes.Buffer
		for _, mf := range mfs {
			if _, err := protodelim.MarshalTo(&b, mf); err != nil {
				f.Fatal(err)
			}
		}
		f.Add(b.Bytes(), i%2 == 0, uint16(i))
	}
	f.Add([]byte{0x05, 0x01}, false, uint16(0))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, false, uint16(0))
	f.Add([]byte{0x00, 0x00, 0x00}, false, uint16(0))
	f.Fuzz(func(t *testing.T, body []byte, utf8Names bool, limit uint16) {
		checkDecode(t, body, fuzzProtoType, utf8Names, limit)
	})
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// checkDecode decodes body and checks the decoder's promises: no panic; a
// limit (set just below, at, or just above the body's length, from limit)
// is never exceeded, a longer body is always rejected and only a longer one
// gets ErrTooLarge; errors are one line; accepted families are sorted, named
// once, typed and carry their type's value, and every string they carry is
// valid UTF-8 (requireUTF8); expfmt renders them and its rendering decodes
// to the same thing again; and the store either takes them or rejects them
// as a push that is Refused by admission.
func checkDecode(t *testing.T, body []byte, contentType string, utf8Names bool, limit uint16) {
	maxBytes := max(int64(len(body))-1+int64(limit%3), 1)
	var src io.Reader = bytes.NewReader(body)
	if limit&4 != 0 {
		src = iotest.OneByteReader(src) // Short reads, as from a slow client.
	}
	cr := &countingReader{r: src}
	opts := exposition.DecodeOptions{UTF8Names: utf8Names, MaxBytes: maxBytes}
	decoded, err := exposition.Decode(cr, contentType, opts)
	if cr.n > maxBytes+1 {
		t.Fatalf("read %d bytes with a limit of %d", cr.n, maxBytes)
	}
	tooLong := int64(len(body)) > maxBytes
	if err != nil {
		if msg := err.Error(); msg == "" || strings.ContainsAny(msg, "\r\n") {
			t.Fatalf("error is not one non-empty line: %q", msg)
		}
		if errors.Is(err, exposition.ErrTooLarge) && !tooLong {
			t.Fatalf("%d-byte body rejected as too large with a limit of %d: %v", len(body), maxBytes, err)
		}
		return
	}
	if tooLong {
		t.Fatalf("%d-byte body accepted with a limit of %d", len(body), maxBytes)
	}
	fams := decoded.Families
	for i, mf := range fams {
		if i > 0 && fams[i-1].GetName() >= mf.GetName() {
			t.Fatalf("families not sorted or repeated: %q then %q", fams[i-1].GetName(), mf.GetName())
		}
		if !exposition.ValidMetricName(mf.GetName(), utf8Names) {
			t.Fatalf("accepted the invalid metric name %q", mf.GetName())
		}
		if mf.Type == nil || len(mf.Metric) == 0 {
			t.Fatalf("family %q: type %v, %d metrics", mf.GetName(), mf.Type, len(mf.Metric))
		}
		for _, m := range mf.Metric {
			if err := exposition.CheckMetricValue(mf.GetType(), m); err != nil {
				t.Fatalf("family %q: %v", mf.GetName(), err)
			}
		}
		requireUTF8(t, mf)
	}
	requireReencodes(t, fams, contentType, utf8Names)

	// The store's checks either take the families or reject them cleanly.
	st := store.New(store.Options{UTF8Names: utf8Names})
	_, err = st.Push(context.Background(), store.Push{
		Key:      groupkey.New(map[string]string{"job": "fuzz"}),
		Method:   store.Replace,
		Families: fams,
		Time:     time.Unix(1700000000, 0),
	})
	var rej *admission.Error
	if err != nil && (!errors.As(err, &rej) || rej.Class != admission.Refused) {
		t.Fatalf("store push: %T %v", err, err)
	}
}

// requireUTF8 fails unless every string of an accepted family is valid
// UTF-8: its name, HELP text and unit, and the names and values of its
// labels and exemplar labels. Prometheus' scrape parsers refuse a whole
// scrape for one HELP line that is not (expfmt, which the other checks use,
// takes it), and a name is written escaped, no longer what was pushed.
func requireUTF8(t *testing.T, mf *dto.MetricFamily) {
	t.Helper()
	strs := []string{mf.GetName(), mf.GetHelp(), mf.GetUnit()}
	pairs := func(lps []*dto.LabelPair) {
		for _, lp := range lps {
			strs = append(strs, lp.GetName(), lp.GetValue())
		}
	}
	for _, m := range mf.Metric {
		pairs(m.Label)
		pairs(m.GetCounter().GetExemplar().GetLabel())
		for _, b := range m.GetHistogram().GetBucket() {
			pairs(b.GetExemplar().GetLabel())
		}
		for _, e := range m.GetHistogram().GetExemplars() {
			pairs(e.GetLabel())
		}
	}
	for _, s := range strs {
		if !utf8.ValidString(s) {
			t.Fatalf("family %q accepted with the string %q, which is not valid UTF-8", mf.GetName(), s)
		}
	}
}

// requireReencodes renders the decoded families with expfmt (text, and
// protobuf for protobuf bodies), decodes the rendering again and requires
// the same text rendering: accepted output is a fixed point of expfmt.
func requireReencodes(t *testing.T, fams []*dto.MetricFamily, contentType string, utf8Names bool) {
	t.Helper()
	text1 := renderText(t, fams)
	again, err := exposition.Decode(bytes.NewReader(text1), "", exposition.DecodeOptions{UTF8Names: utf8Names})
	if err != nil && !exposition.IsProtobuf(contentType) {
		t.Fatalf("expfmt's rendering of accepted families does not decode: %v\n%s", err, text1)
	}
	if err == nil && !exposition.IsProtobuf(contentType) {
		if text2 := renderText(t, again.Families); !bytes.Equal(text1, text2) {
			t.Fatalf("text round trip differs:\nfirst:\n%s\nsecond:\n%s", text1, text2)
		}
	}
	if !exposition.IsProtobuf(contentType) {
		return
	}
	var pb bytes.Buffer
	enc := expfmt.NewEncoder(&pb, expfmt.NewFormat(expfmt.TypeProtoDelim).WithEscapingScheme(model.NoEscaping))
	for _, mf := range fams {
		if err := enc.Encode(mf); err != nil {
			t.Fatalf("expfmt cannot encode family %q as protobuf: %v", mf.GetName(), err)
		}
	}
	again, err = exposition.Decode(&pb, contentType, exposition.DecodeOptions{UTF8Names: utf8Names})
	if err != nil {
		t.Fatalf("expfmt's protobuf encoding of accepted families does not decode: %v", err)
	}
	if text2 := renderText(t, again.Families); !bytes.Equal(text1, text2) {
		t.Fatalf("protobuf round trip differs:\nfirst:\n%s\nsecond:\n%s", text1, text2)
	}
}

// renderText renders families with expfmt's text format, failing on error.
func renderText(t *testing.T, fams []*dto.MetricFamily) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, mf := range fams {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatalf("expfmt cannot render accepted family %q: %v", mf.GetName(), err)
		}
	}
	return b.Bytes()
}
