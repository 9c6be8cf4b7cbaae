package exposition

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"
)

// encodeCase is one family to render, split into the groups that hold it.
type encodeCase struct {
	name   string
	groups []*dto.MetricFamily // same name, help, type and unit each
}

// withHelp sets the help text of mf and returns it.
func withHelp(mf *dto.MetricFamily, help string) *dto.MetricFamily {
	mf.Help = proto.String(help)
	return mf
}

// counterFamily is a counter family with one metric per label value of l.
func counterFamily(name string, values ...string) *dto.MetricFamily {
	mf := &dto.MetricFamily{Name: proto.String(name), Type: dto.MetricType_COUNTER.Enum()}
	for i, v := range values {
		mf.Metric = append(mf.Metric, &dto.Metric{
			Label:   []*dto.LabelPair{{Name: proto.String("l"), Value: proto.String(v)}},
			Counter: &dto.Counter{Value: proto.Float64(float64(i) + 0.5)},
		})
	}
	return mf
}

// classicHistogram is a histogram family of type typ with one metric.
func classicHistogram(name string, typ dto.MetricType, instance string) *dto.MetricFamily {
	return &dto.MetricFamily{
		Name: proto.String(name), Type: typ.Enum(),
		Metric: []*dto.Metric{{
			Label: []*dto.LabelPair{{Name: proto.String("instance"), Value: proto.String(instance)}},
			Histogram: &dto.Histogram{
				SampleCount: proto.Uint64(7), SampleSum: proto.Float64(3.5),
				Bucket: []*dto.Bucket{
					{UpperBound: proto.Float64(0.1), CumulativeCount: proto.Uint64(2)},
					{UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(6)},
				},
			},
		}},
	}
}

// nativeHistogram is a native histogram family; float selects float counts.
func nativeHistogram(name string, float bool) *dto.MetricFamily {
	h := &dto.Histogram{
		SampleSum:     proto.Float64(12.5),
		Schema:        proto.Int32(3),
		ZeroThreshold: proto.Float64(1e-128),
		PositiveSpan:  []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(2)}, {Offset: proto.Int32(3), Length: proto.Uint32(1)}},
		NegativeSpan:  []*dto.BucketSpan{{Offset: proto.Int32(-2), Length: proto.Uint32(1)}},
	}
	if float {
		h.SampleCountFloat = proto.Float64(9.5)
		h.ZeroCountFloat = proto.Float64(0.5)
		h.PositiveCount = []float64{1, 2.5, 4}
		h.NegativeCount = []float64{1.5}
	} else {
		h.SampleCount = proto.Uint64(10)
		h.ZeroCount = proto.Uint64(1)
		h.PositiveDelta = []int64{2, 1, -1}
		h.NegativeDelta = []int64{3}
	}
	return &dto.MetricFamily{Name: proto.String(name), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{Histogram: h}}}
}

// encodeCases covers every metric type, help and unit escaping, UTF-8 names
// and families spread over several groups.
func encodeCases() []encodeCase {
	summary := &dto.MetricFamily{
		Name: proto.String("rpc_seconds"), Type: dto.MetricType_SUMMARY.Enum(),
		Metric: []*dto.Metric{{
			Label: []*dto.LabelPair{{Name: proto.String("job"), Value: proto.String("a")}},
			Summary: &dto.Summary{SampleCount: proto.Uint64(3), SampleSum: proto.Float64(1.25), Quantile: []*dto.Quantile{
				{Quantile: proto.Float64(0.5), Value: proto.Float64(0.25)},
				{Quantile: proto.Float64(0.99), Value: proto.Float64(math.NaN())},
			}},
		}},
	}
	untyped := &dto.MetricFamily{Name: proto.String("plain"), Type: dto.MetricType_UNTYPED.Enum(), Metric: []*dto.Metric{{Untyped: &dto.Untyped{Value: proto.Float64(-1)}}}}
	withUnit := gaugeFamily("disk_bytes", 1e12, "dev", "sda")
	withUnit.Unit = proto.String("bytes")
	utf8Gauge := withHelp(gaugeFamily("my.metric", 2, "lab.el", "v\"q", "ok", "\\\n"), "UTF-8 \"named\"")
	utf8Counter := counterFamily("req.count_total", "x")
	return []encodeCase{
		{"a counter with _total", []*dto.MetricFamily{withHelp(counterFamily("http_requests_total", "a", "b"), "Requests served.")}},
		{"a counter without _total", []*dto.MetricFamily{withHelp(counterFamily("http_requests", "a"), "Requests.")}},
		{"a gauge without help", []*dto.MetricFamily{gaugeFamily("temp", 21.5, "room", "kitchen")}},
		{"a gauge with help that needs escaping", []*dto.MetricFamily{withHelp(gaugeFamily("temp", 21.5), "back\\slash, new\nline and \"quotes\"")}},
		{"a gauge with a unit", []*dto.MetricFamily{withUnit}},
		{"an untyped metric", []*dto.MetricFamily{untyped}},
		{"a summary", []*dto.MetricFamily{withHelp(summary, "RPC latency.")}},
		{"a classic histogram", []*dto.MetricFamily{classicHistogram("lat_seconds", dto.MetricType_HISTOGRAM, "i1")}},
		{"a gauge histogram", []*dto.MetricFamily{classicHistogram("queue_seconds", dto.MetricType_GAUGE_HISTOGRAM, "i1")}},
		{"an integer native histogram", []*dto.MetricFamily{withHelp(nativeHistogram("native_seconds", false), "Native.")}},
		{"a float native histogram", []*dto.MetricFamily{nativeHistogram("native_float_seconds", true)}},
		{"a UTF-8 gauge", []*dto.MetricFamily{utf8Gauge}},
		{"a UTF-8 counter with _total", []*dto.MetricFamily{utf8Counter}},
		{"a counter spread over three groups", []*dto.MetricFamily{
			withHelp(counterFamily("jobs_total", "a"), "Jobs."),
			withHelp(counterFamily("jobs_total", "b", "c"), "Jobs."),
			withHelp(counterFamily("jobs_total", "d"), "Jobs."),
		}},
		{"a histogram spread over two groups", []*dto.MetricFamily{
			classicHistogram("lat_seconds", dto.MetricType_HISTOGRAM, "i1"),
			classicHistogram("lat_seconds", dto.MetricType_HISTOGRAM, "i2"),
		}},
	}
}

// merged is the family expfmt sees: all groups' metrics under one header.
func merged(groups []*dto.MetricFamily) *dto.MetricFamily {
	first := groups[0]
	mf := &dto.MetricFamily{Name: first.Name, Help: first.Help, Type: first.Type, Unit: first.Unit}
	for _, g := range groups {
		mf.Metric = append(mf.Metric, g.Metric...)
	}
	return mf
}

// allFormats is every encoding under every escaping scheme.
func allFormats() []Format {
	var formats []Format
	for _, media := range []string{
		"text/plain;version=0.0.4",
		"application/openmetrics-text;version=1.0.0",
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited",
	} {
		for _, esc := range []string{"underscores", "dots", "values", "allow-utf-8"} {
			formats = append(formats, Negotiate(http.Header{"Accept": {media + ";escaping=" + esc}}))
		}
	}
	return formats
}

// assemble renders groups as a whole response in f from the blocks.
func assemble(groups []*dto.MetricFamily, f Format) ([]byte, error) {
	first := groups[0]
	header := AppendHeader(nil, first.GetName(), first.GetHelp(), first.GetType(), first.GetUnit(), f)
	var bodies []byte
	for _, g := range groups {
		var err error
		if bodies, err = AppendBody(bodies, g, f); err != nil {
			return nil, err
		}
	}
	var out []byte
	if f.Encoding() == EncodingProtobuf {
		out = AppendFrameLength(out, len(header)+len(bodies))
	}
	out = append(out, header...)
	out = append(out, bodies...)
	return AppendTrailer(out, f), nil
}

func TestBlocksMatchExpfmt(t *testing.T) {
	for _, tc := range encodeCases() {
		for _, f := range allFormats() {
			t.Run(fmt.Sprintf("%s in %s", tc.name, f.ContentType()), func(t *testing.T) {
				var want bytes.Buffer
				enc := expfmt.NewEncoder(&want, expfmt.Format(f.ContentType()))
				wantErr := enc.Encode(merged(tc.groups))
				if wantErr == nil {
					wantErr = enc.(expfmt.Closer).Close()
				}
				got, err := assemble(tc.groups, f)
				if wantErr != nil {
					if err == nil {
						t.Fatalf("blocks rendered, but expfmt fails with %v", wantErr)
					}
					return
				}
				if err != nil {
					t.Fatalf("blocks: %v", err)
				}
				if f.Encoding() == EncodingProtobuf && tc.groups[0].Unit != nil {
					// The unit field follows the metrics in expfmt's
					// encoding and precedes them in ours: compare messages.
					compareMessages(t, got, want.Bytes())
					return
				}
				if !bytes.Equal(got, want.Bytes()) {
					t.Errorf("blocks differ from expfmt\n got: %q\nwant: %q", got, want.Bytes())
				}
			})
		}
	}
}

// compareMessages requires two delimited protobuf streams of one message
// each to hold equal messages.
func compareMessages(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w dto.MetricFamily
	if err := protodelim.UnmarshalFrom(bytes.NewReader(got), &g); err != nil {
		t.Fatalf("unmarshal blocks: %v", err)
	}
	if err := protodelim.UnmarshalFrom(bytes.NewReader(want), &w); err != nil {
		t.Fatalf("unmarshal expfmt: %v", err)
	}
	if !proto.Equal(&g, &w) {
		t.Errorf("blocks = %v, want %v", &g, &w)
	}
}

func TestPlainFamiliesRenderAlikeInEveryEscaping(t *testing.T) {
	for _, tc := range encodeCases() {
		mf := tc.groups[0]
		if !LegacyNames(mf) {
			continue
		}
		for _, f := range allFormats() {
			t.Run(fmt.Sprintf("%s in %s", tc.name, f.ContentType()), func(t *testing.T) {
				got, gotErr := AppendBody(nil, mf, f)
				cached, cachedErr := AppendBody(nil, mf, NewFormat(f.Encoding()))
				if (gotErr != nil) != (cachedErr != nil) || !bytes.Equal(got, cached) {
					t.Errorf("body = %q (%v), cached body = %q (%v)", got, gotErr, cached, cachedErr)
				}
			})
		}
	}
}

func TestAppendBodyAppendsToItsInput(t *testing.T) {
	mf := counterFamily("c_total", "a")
	for _, f := range allFormats() {
		t.Run(f.ContentType()+" keeps the prefix", func(t *testing.T) {
			alone, err := AppendBody(nil, mf, f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := AppendBody([]byte("prefix"), mf, f)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "prefix"+string(alone) {
				t.Errorf("AppendBody(prefix) = %q, want prefix + %q", got, alone)
			}
		})
	}
}

func TestAppendBodyOfAnEmptyFamilyIsEmpty(t *testing.T) {
	mf := &dto.MetricFamily{Name: proto.String("e"), Type: dto.MetricType_GAUGE.Enum()}
	for _, f := range allFormats() {
		t.Run(f.ContentType()+" renders nothing", func(t *testing.T) {
			got, err := AppendBody(nil, mf, f)
			if err != nil || len(got) != 0 {
				t.Errorf("AppendBody = %q, %v; want nothing", got, err)
			}
		})
	}
}

func TestAppendTrailer(t *testing.T) {
	for _, f := range allFormats() {
		want := ""
		if f.Encoding() == EncodingOpenMetrics {
			want = "# EOF\n"
		}
		t.Run(fmt.Sprintf("%s ends with %q", f.ContentType(), want), func(t *testing.T) {
			if got := string(AppendTrailer(nil, f)); got != want {
				t.Errorf("AppendTrailer = %q, want %q", got, want)
			}
		})
	}
}

func BenchmarkAppendBody(b *testing.B) {
	families := batchJobFamilies()
	for _, enc := range []Encoding{EncodingText, EncodingOpenMetrics, EncodingProtobuf} {
		f := NewFormat(enc)
		b.Run(enc.String(), func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				buf = buf[:0]
				for _, mf := range families {
					var err error
					if buf, err = AppendBody(buf, mf, f); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.SetBytes(int64(len(buf)))
		})
	}
}

func BenchmarkAppendHeader(b *testing.B) {
	families := batchJobFamilies()
	for _, enc := range []Encoding{EncodingText, EncodingOpenMetrics, EncodingProtobuf} {
		f := NewFormat(enc)
		b.Run(enc.String(), func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				buf = buf[:0]
				for _, mf := range families {
					buf = AppendHeader(buf, mf.GetName(), mf.GetHelp(), mf.GetType(), mf.GetUnit(), f)
				}
			}
		})
	}
}

func TestAppendHeaderWithoutTypeWritesNoTypeLineInOpenMetrics(t *testing.T) {
	tests := []struct {
		accept, want string
	}{
		{"application/openmetrics-text;version=1.0.0",
			"# HELP x_total Help \\\"q\\\".\n# UNIT x_total bytes\n"},
		{"application/openmetrics-text;version=1.0.0;escaping=values",
			"# HELP x_total Help \\\"q\\\".\n# UNIT x_total bytes\n"},
		{"text/plain;version=0.0.4",
			"# HELP x_total Help \"q\".\n# TYPE x_total untyped\n"},
	}
	for _, tt := range tests {
		t.Run(tt.accept, func(t *testing.T) {
			f := Negotiate(http.Header{"Accept": {tt.accept}})
			if got := string(AppendHeaderWithoutType(nil, "x_total", "Help \"q\".", "bytes", f)); got != tt.want {
				t.Errorf("header %q, want %q", got, tt.want)
			}
		})
	}
	om := NewFormat(EncodingOpenMetrics)
	if got := string(AppendHeaderWithoutType(nil, "x_total", "", "", om)); got != "" {
		t.Errorf("header without help or unit = %q, want nothing", got)
	}
	if got, want := string(AppendHeaderWithoutType(nil, "a.b_total", "H.", "", om)), "# HELP \"a.b_total\" H.\n"; got != want {
		t.Errorf("header of a UTF-8 name = %q, want %q", got, want)
	}
}
