package exposition

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// decodeProtobufReference is the protobuf decoder before protoReader:
// proto.Unmarshal for every message, then the same sorting, de-duplication
// and checks. The differential tests hold decodeProtobuf to it.
func decodeProtobufReference(body []byte, opts DecodeOptions) ([]*dto.MetricFamily, error) {
	var families []*dto.MetricFamily
	series := 0
	b := body
	for i := 1; len(b) > 0; i++ {
		size, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return nil, fmt.Errorf("protobuf: invalid length of message %d: %w", i, protowire.ParseError(n))
		}
		b = b[n:]
		if size > uint64(len(b)) {
			return nil, fmt.Errorf("protobuf: unexpected EOF in message %d: length %d, %d bytes left", i, size, len(b))
		}
		if opts.MaxSeries > 0 {
			var err error
			if series, err = countFamilySeries(series, countProtobufMetrics(b[:size]), opts.MaxSeries); err != nil {
				return nil, err
			}
		}
		mf := new(dto.MetricFamily)
		if err := proto.Unmarshal(b[:size], mf); err != nil {
			return nil, fmt.Errorf("protobuf: message %d: %w", i, err)
		}
		b = b[size:]
		families = append(families, mf)
	}
	return lastOfEachName(families, opts.UTF8Names)
}

// frame delimits families into one push body.
func frame(t testing.TB, families ...*dto.MetricFamily) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, mf := range families {
		if _, err := protodelim.MarshalTo(&buf, mf); err != nil {
			t.Fatalf("marshal %q: %v", mf.GetName(), err)
		}
	}
	return buf.Bytes()
}

// clientGolangBody is what client_golang's push package sends for a
// registry holding every kind of metric, with created timestamps on the
// counters, summaries and histograms as client_golang sets them. With
// native set, it adds a native histogram and a counter with an exemplar,
// which protoReader leaves to proto.Unmarshal.
func clientGolangBody(t testing.TB, native bool) []byte {
	t.Helper()
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "job_items_total", Help: "Items processed."}, []string{"stage"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "job_last_success_seconds", Help: "Last success.", ConstLabels: prometheus.Labels{"team": "ä"}})
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "job_duration_seconds", Help: "Duration.", Buckets: []float64{0.1, 1, 10}})
	s := prometheus.NewSummary(prometheus.SummaryOpts{Name: "job_batch_size", Help: "Batch size.", Objectives: map[float64]float64{0.5: 0.05, 0.99: 0.001}})
	u := prometheus.NewUntypedFunc(prometheus.UntypedOpts{Name: "job_untyped", Help: "Untyped."}, func() float64 { return -3 })
	reg.MustRegister(c, g, h, s, u)
	c.WithLabelValues("load").Add(3)
	c.WithLabelValues("save").Add(math.Inf(1))
	g.Set(1.7e9)
	h.Observe(0.5)
	h.Observe(20)
	s.Observe(7)
	if native {
		nh := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "job_native_seconds", Help: "Native.", NativeHistogramBucketFactor: 1.1})
		ex := prometheus.NewCounter(prometheus.CounterOpts{Name: "job_exemplar_total", Help: "With exemplar."})
		reg.MustRegister(nh, ex)
		nh.Observe(0.3)
		ex.(prometheus.ExemplarAdder).AddWithExemplar(1, prometheus.Labels{"trace_id": "abc"})
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeProtoDelim))
	for _, mf := range families {
		if err := enc.Encode(mf); err != nil {
			t.Fatalf("encode %q: %v", mf.GetName(), err)
		}
	}
	return buf.Bytes()
}

// protoEdgeFamilies are families of unusual but valid shapes.
func protoEdgeFamilies() []*dto.MetricFamily {
	f := proto.Float64
	return []*dto.MetricFamily{
		{Name: proto.String("neg"), Help: proto.String(""), Type: dto.MetricType_GAUGE.Enum(), Unit: proto.String("seconds"), Metric: []*dto.Metric{
			{Gauge: &dto.Gauge{Value: f(math.NaN())}, TimestampMs: proto.Int64(-5)},
			{Label: []*dto.LabelPair{{Name: proto.String("a"), Value: proto.String("")}}, Gauge: &dto.Gauge{Value: f(math.Copysign(0, -1))}},
			{Label: []*dto.LabelPair{{Name: proto.String("a")}}, Gauge: &dto.Gauge{}},
		}},
		{Name: proto.String("fh"), Type: dto.MetricType_GAUGE_HISTOGRAM.Enum(), Metric: []*dto.Metric{{Histogram: &dto.Histogram{
			SampleCountFloat: f(2.5), SampleSum: f(-1),
			Bucket:           []*dto.Bucket{{UpperBound: f(1), CumulativeCountFloat: f(1.5)}, {UpperBound: f(math.Inf(1))}},
			CreatedTimestamp: &timestamppb.Timestamp{Seconds: -1, Nanos: -3},
		}}}},
		{Name: proto.String("sum"), Type: dto.MetricType_SUMMARY.Enum(), Metric: []*dto.Metric{{Summary: &dto.Summary{
			Quantile: []*dto.Quantile{{Quantile: f(0.5)}, {Value: f(1)}}, CreatedTimestamp: &timestamppb.Timestamp{},
		}}}},
		{Name: proto.String("nothing")},
		{Metric: []*dto.Metric{{}}},
	}
}

// protoBodies are the bodies the table tests and the fuzz seeds share.
func protoBodies(t testing.TB) map[string][]byte {
	edge := protoEdgeFamilies()
	bodies := map[string][]byte{
		"the batch-job payload":             batchJobProtobuf(t),
		"a client_golang push":              clientGolangBody(t, false),
		"a client_golang push with natives": clientGolangBody(t, true),
		"edge cases":                        frame(t, edge...),
		"an empty body":                     nil,
		"a truncated length varint":         {0x80},
		"a huge length":                     {0xff, 0xff, 0xff, 0xff, 0x0f, 0x0a},
		"a length past the body":            {0x05, 0x0a, 0x01, 'm'},
		"a truncated varint in a message":   {0x02, 0x18, 0x80},
		"an unknown type value":             {0x05, 0x0a, 0x01, 'm', 0x18, 0x07},
		"an unknown field":                  {0x05, 0x0a, 0x01, 'm', 0x30, 0x01},
		"a name with the wrong wire type":   {0x02, 0x08, 0x01},
		"an invalid UTF-8 name":             frame(t, &dto.MetricFamily{Name: proto.String("m\xff"), Metric: []*dto.Metric{{Counter: &dto.Counter{Value: proto.Float64(1)}}}}),
		"an invalid UTF-8 help":             frame(t, &dto.MetricFamily{Name: proto.String("m"), Help: proto.String("\xfe"), Metric: []*dto.Metric{{Counter: &dto.Counter{Value: proto.Float64(1)}}}}),
		"a repeated family":                 frame(t, edge[0], edge[0]),
	}
	for name, body := range bodies {
		if len(body) > 2 {
			bodies[name+", truncated"] = body[:len(body)-2]
		}
	}
	return bodies
}

// holdsUnknown reports whether m or any message inside it holds unknown
// fields.
func holdsUnknown(m protoreflect.Message) bool {
	found := len(m.GetUnknown()) > 0
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Message() == nil:
		case fd.IsList():
			for i := 0; i < v.List().Len() && !found; i++ {
				found = holdsUnknown(v.List().Get(i).Message())
			}
		default:
			found = holdsUnknown(v.Message())
		}
		return !found
	})
	return found
}

// requireSameDecode decodes body with decodeProtobuf twice, the second
// time into the memory the first released, and with
// decodeProtobufReference, and requires the same families or the same
// error. It also compares each message protoReader handles with
// proto.Unmarshal's reading of it, and returns how many messages went to
// proto.Unmarshal.
func requireSameDecode(t *testing.T, body []byte, opts DecodeOptions) int {
	t.Helper()
	want, wantErr := decodeProtobufReference(bytes.Clone(body), opts)
	for round := range 2 {
		d, err := decodeProtobuf(bytes.NewReader(body), opts)
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Fatalf("round %d: error %v, want %v", round, err, wantErr)
		}
		if err != nil {
			continue
		}
		if len(d.Families) != len(want) {
			t.Fatalf("round %d: %d families, want %d", round, len(d.Families), len(want))
		}
		for _, mf := range d.Families {
			if d.KnownFields && holdsUnknown(mf.ProtoReflect()) {
				t.Fatalf("round %d: KnownFields is set, but family %q holds unknown fields", round, mf.GetName())
			}
		}
		for i := range want {
			if !proto.Equal(d.Families[i], want[i]) {
				t.Fatalf("round %d: family %d =\n%v\nwant\n%v", round, i, d.Families[i], want[i])
			}
		}
		d.Release()
	}

	// Message by message, before the de-duplication and checks.
	var r protoReader
	fallbacks := 0
	for b := body; len(b) > 0; {
		size, n := protowire.ConsumeVarint(b)
		if n < 0 || size > uint64(len(b[n:])) {
			break
		}
		msg := b[n : n+int(size)]
		b = b[n+int(size):]
		r.hint = len(b) + 1
		f, ok := r.family(msg)
		if !ok {
			fallbacks++
			continue
		}
		var mf dto.MetricFamily
		if err := proto.Unmarshal(msg, &mf); err != nil {
			t.Fatalf("protoReader read a message proto.Unmarshal rejects (%v): %v", err, &f.mf)
		}
		if !proto.Equal(&f.mf, &mf) {
			t.Fatalf("protoReader read\n%v\nproto.Unmarshal read\n%v", &f.mf, &mf)
		}
	}
	return fallbacks
}

func TestProtoReaderMatchesUnmarshal(t *testing.T) {
	tests := []struct {
		body          string
		wantFallbacks int
	}{
		{"the batch-job payload", 0},
		{"a client_golang push", 0},
		{"a client_golang push with natives", 2},
		{"edge cases", 0},
		{"an empty body", 0},
		{"an unknown type value", 1},
		{"an unknown field", 1},
		{"a name with the wrong wire type", 1},
		{"an invalid UTF-8 name", 0},
		{"a repeated family", 0},
	}
	bodies := protoBodies(t)
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			body, ok := bodies[tt.body]
			if !ok {
				t.Fatalf("no body %q", tt.body)
			}
			for _, opts := range []DecodeOptions{{}, {UTF8Names: true}, {MaxSeries: 5}} {
				if got := requireSameDecode(t, body, opts); got != tt.wantFallbacks {
					t.Errorf("%d messages went to proto.Unmarshal, want %d", got, tt.wantFallbacks)
				}
			}
		})
	}
	// Every body, truncated ones and errors included, decodes as before.
	for name, body := range bodies {
		t.Run("same result: "+name, func(t *testing.T) {
			requireSameDecode(t, body, DecodeOptions{UTF8Names: true})
			requireSameDecode(t, body, DecodeOptions{})
		})
	}
}

// FuzzProtoReaderMatchesUnmarshal is the differential test of the protobuf
// decoder: on any body, decodeProtobuf (fresh and after a release) gives the
// families, or the error, that proto.Unmarshal of every message gives, and
// every message protoReader reads itself equals proto.Unmarshal's.
func FuzzProtoReaderMatchesUnmarshal(f *testing.F) {
	for _, body := range protoBodies(f) {
		f.Add(body, false, uint8(0))
		f.Add(body, true, uint8(3))
	}
	for _, mf := range protoEdgeFamilies() {
		f.Add(frame(f, mf), false, uint8(0))
	}
	f.Fuzz(func(t *testing.T, body []byte, utf8Names bool, maxSeries uint8) {
		requireSameDecode(t, body, DecodeOptions{UTF8Names: utf8Names, MaxSeries: int(maxSeries)})
	})
}

// TestProtoDecoderRewindLeavesNothingBehind decodes bodies into one decoder
// and rewinds it as Release does: afterwards no arena object, scratch slice
// nor output slot may still point into the body, or the pool would keep
// bodies alive and hand stale fields to the next push.
func TestProtoDecoderRewindLeavesNothingBehind(t *testing.T) {
	d := new(protoDecoder)
	for name, body := range protoBodies(t) {
		d.fallbacks = 0
		_, _ = d.decode(body, DecodeOptions{UTF8Names: true})
		d.rewind()
		requireZero(t, name, "out", d.out[:cap(d.out)])
		requireZero(t, name, "metric scratch", d.r.metricScratch[:cap(d.r.metricScratch)])
		requireZero(t, name, "label scratch", d.r.labelScratch[:cap(d.r.labelScratch)])
		requireZero(t, name, "quantile scratch", d.r.quantileScratch[:cap(d.r.quantileScratch)])
		requireZero(t, name, "bucket scratch", d.r.bucketScratch[:cap(d.r.bucketScratch)])
		requireZeroArena(t, name, "families", &d.r.families)
		requireZeroArena(t, name, "metrics", &d.r.metrics)
		requireZeroArena(t, name, "metric pointers", &d.r.metricPtrs)
		requireZeroArena(t, name, "label pairs", &d.r.labelPairs)
		requireZeroArena(t, name, "label pointers", &d.r.labelPtrs)
		requireZeroArena(t, name, "counters", &d.r.counters)
		requireZeroArena(t, name, "gauges", &d.r.gauges)
		requireZeroArena(t, name, "untypeds", &d.r.untypeds)
		requireZeroArena(t, name, "summaries", &d.r.summaries)
		requireZeroArena(t, name, "quantiles", &d.r.quantiles)
		requireZeroArena(t, name, "quantile pointers", &d.r.quantilePtrs)
		requireZeroArena(t, name, "histograms", &d.r.histograms)
		requireZeroArena(t, name, "buckets", &d.r.buckets)
		requireZeroArena(t, name, "bucket pointers", &d.r.bucketPtrs)
		requireZeroArena(t, name, "created timestamps", &d.r.created)
	}
	if d.r.metrics.capacity() == 0 || d.r.labelPairs.capacity() == 0 {
		t.Errorf("the arenas kept nothing for reuse")
	}
}

// requireZeroArena fails unless every object of a's chunks is zero.
func requireZeroArena[T any](t *testing.T, body, what string, a *arena[T]) {
	t.Helper()
	for _, c := range a.chunks {
		requireZero(t, body, what, c)
	}
}

// requireZero fails unless every element of s is its zero value.
func requireZero[T any](t *testing.T, body, what string, s []T) {
	t.Helper()
	for i := range s {
		if !reflect.ValueOf(&s[i]).Elem().IsZero() {
			t.Fatalf("after %s: %s[%d] is not zero after rewind", body, what, i)
		}
	}
}

// TestDecodePooledProtobufReusesMemory fails if the pooled protobuf
// decoder stops reusing its memory: a released decode of the batch-job
// payload must allocate far less than proto.Unmarshal does (under -race,
// sync.Pool drops a quarter of what it is given, so the bound is loose).
func TestDecodePooledProtobufReusesMemory(t *testing.T) {
	body := batchJobProtobuf(t)
	unmarshal := testing.AllocsPerRun(50, func() {
		if _, err := decodeProtobufReference(body, DecodeOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	pooled := testing.AllocsPerRun(50, func() {
		d, err := Decode(bytes.NewReader(body), protobufContentType, DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Release()
	})
	if pooled > unmarshal/10 {
		t.Errorf("Decode+Release: %.0f allocations per body, proto.Unmarshal: %.0f; want at most a tenth", pooled, unmarshal)
	}
	t.Logf("allocations per body: proto.Unmarshal %.0f, Decode+Release %.0f", unmarshal, pooled)
}

// TestDecodePooledProtobufAcrossReuse decodes protobuf bodies of different
// shapes once and keeps the families, then decodes them one after another,
// three times, each into memory the previous ones released, and requires
// what the first decode gave each time.
func TestDecodePooledProtobufAcrossReuse(t *testing.T) {
	bodies := protoBodies(t)
	names := make([]string, 0, len(bodies))
	wants := make(map[string][]*dto.MetricFamily, len(bodies))
	wantErrs := make(map[string]error, len(bodies))
	for name, body := range bodies {
		names = append(names, name)
		wants[name], wantErrs[name] = decodeFamilies(bytes.NewReader(body), protobufContentType, DecodeOptions{})
	}
	for round := range 3 {
		for _, name := range names {
			body := bodies[name]
			want, wantErr := wants[name], wantErrs[name]
			got, err := Decode(bytes.NewReader(body), protobufContentType, DecodeOptions{})
			if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
				t.Fatalf("round %d, %s: err = %v, want %v", round, name, err, wantErr)
			}
			if err != nil {
				if strings.ContainsAny(err.Error(), "\n") {
					t.Errorf("round %d, %s: error is not one line: %q", round, name, err)
				}
				continue
			}
			if len(got.Families) != len(want) {
				t.Fatalf("round %d, %s: %d families, want %d", round, name, len(got.Families), len(want))
			}
			for i := range want {
				if !proto.Equal(got.Families[i], want[i]) {
					t.Errorf("round %d, %s: family %d = %v, want %v", round, name, i, got.Families[i], want[i])
				}
			}
			got.Release()
		}
	}
}

// BenchmarkDecodePooledProtobuf decodes the batch-job payload as a push
// does (Decode, then Release) and, side by side, with
// proto.Unmarshal per message (the decoder before protoReader).
func BenchmarkDecodePooledProtobuf(b *testing.B) {
	body := batchJobProtobuf(b)
	b.Run("decoder=pushgate", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			d, err := Decode(bytes.NewReader(body), protobufContentType, DecodeOptions{MaxBytes: 1 << 20})
			if err != nil {
				b.Fatal(err)
			}
			d.Release()
		}
	})
	b.Run("decoder=unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := decodeProtobufReference(body, DecodeOptions{MaxBytes: 1 << 20}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDecodedKnownFields checks what Decoded.KnownFields says: set for text
// and for protobuf read without proto.Unmarshal, clear when a message with
// an unknown field went to it; and that encoding such a family keeps the
// field unless told it has none.
func TestDecodedKnownFields(t *testing.T) {
	text, err := Decode(strings.NewReader("# TYPE a counter\na 1\n"), "", DecodeOptions{})
	if err != nil || !text.KnownFields {
		t.Fatalf("text: KnownFields %v, err %v; want true", text != nil && text.KnownFields, err)
	}
	text.Release()
	mf := &dto.MetricFamily{Name: proto.String("m"), Type: dto.MetricType_GAUGE.Enum(),
		Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(2)}}}}
	plain := frame(t, mf)
	withUnknown := proto.Clone(mf).(*dto.MetricFamily)
	withUnknown.Metric[0].ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7))
	for _, tt := range []struct {
		name string
		body []byte
		want bool
	}{{"plain", plain, true}, {"unknown field", frame(t, withUnknown), false}} {
		for round := range 2 {
			d, err := decodeProtobuf(bytes.NewReader(tt.body), DecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if d.KnownFields != tt.want {
				t.Fatalf("%s, round %d: KnownFields %v, want %v", tt.name, round, d.KnownFields, tt.want)
			}
			f := NewFormat(EncodingProtobuf)
			if d.KnownFields {
				f = f.WithKnownFields()
			}
			got, err := AppendBody(nil, d.Families[0], f)
			if err != nil {
				t.Fatal(err)
			}
			if want := slowMetricField(t, d.Families[0].Metric[0]); !bytes.Equal(got, want) {
				t.Fatalf("%s, round %d: encoded %x, want %x", tt.name, round, got, want)
			}
			d.Release()
		}
	}
}
