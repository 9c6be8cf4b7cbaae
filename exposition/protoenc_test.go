package exposition

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/pushgate/pushgate/bench/payload"
)

// slowMetricField is field 4 of a MetricFamily for m as proto.Marshal
// writes it: what appendMetricFast must match byte for byte.
func slowMetricField(t testing.TB, m *dto.Metric) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := protowire.AppendTag(nil, fieldMetric, protowire.BytesType)
	return protowire.AppendBytes(out, b)
}

// metricFromBytes builds a metric of the shapes batch jobs push from fuzz
// input: each byte picks whether a field is present and what it holds.
func metricFromBytes(data []byte) *dto.Metric {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	float := func() *float64 {
		switch k := next(); k % 8 {
		case 0:
			return nil
		case 1:
			return proto.Float64(math.NaN())
		case 2:
			return proto.Float64(math.Inf(-1))
		case 3:
			return proto.Float64(math.Copysign(0, -1))
		default:
			return proto.Float64(float64(int(k)-128) * 1.5e3)
		}
	}
	uint := func() *uint64 {
		k := next()
		if k%5 == 0 {
			return nil
		}
		return proto.Uint64(uint64(k) << (k % 57))
	}
	str := func() *string {
		k := next()
		if k%7 == 0 {
			return nil
		}
		return proto.String(string(bytes.Repeat([]byte{'a' + k%26}, int(k)%200)))
	}
	m := &dto.Metric{}
	for range next() % 5 {
		m.Label = append(m.Label, &dto.LabelPair{Name: str(), Value: str()})
	}
	kinds := next()
	if kinds&1 != 0 {
		m.Gauge = &dto.Gauge{Value: float()}
	}
	created := func() *timestamppb.Timestamp {
		switch k := next(); k % 4 {
		case 0:
			return nil
		case 1:
			return &timestamppb.Timestamp{}
		default:
			return &timestamppb.Timestamp{Seconds: int64(k)<<(k%40) - 1<<30, Nanos: int32(k)*7919 - 1000}
		}
	}
	if kinds&2 != 0 {
		m.Counter = &dto.Counter{Value: float(), CreatedTimestamp: created()}
	}
	if kinds&4 != 0 {
		m.Untyped = &dto.Untyped{Value: float()}
	}
	if kinds&8 != 0 {
		s := &dto.Summary{SampleCount: uint(), SampleSum: float(), CreatedTimestamp: created()}
		for range next() % 4 {
			s.Quantile = append(s.Quantile, &dto.Quantile{Quantile: float(), Value: float()})
		}
		m.Summary = s
	}
	if kinds&16 != 0 {
		h := &dto.Histogram{SampleCount: uint(), SampleSum: float(), CreatedTimestamp: created()}
		if next()%3 == 0 {
			h.SampleCountFloat = float()
		}
		for range next() % 12 {
			b := &dto.Bucket{CumulativeCount: uint(), UpperBound: float()}
			if next()%4 == 0 {
				b.CumulativeCountFloat = float()
			}
			h.Bucket = append(h.Bucket, b)
		}
		m.Histogram = h
	}
	if kinds&32 != 0 {
		ts := int64(next())<<40 - 1<<46
		m.TimestampMs = &ts
	}
	return m
}

func FuzzProtoEncodeFast(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 9, 9, 20, 21, 0xff, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7})
	f.Add(bytes.Repeat([]byte{0xbf}, 300))
	f.Add(bytes.Repeat([]byte{0x11, 0x38}, 200))
	f.Fuzz(func(t *testing.T, data []byte) {
		m := metricFromBytes(data)
		got, ok := appendMetricFast([]byte("prefix"), m, false)
		if !ok {
			t.Fatalf("a plain metric was refused: %v", m)
		}
		want := append([]byte("prefix"), slowMetricField(t, m)...)
		if !bytes.Equal(got, want) {
			t.Fatalf("metric %v:\nfast %x\nslow %x", m, got, want)
		}
		if known, ok := appendMetricFast([]byte("prefix"), m, true); !ok || !bytes.Equal(known, want) {
			t.Fatalf("metric %v with known fields (ok %v):\nfast %x\nslow %x", m, ok, known, want)
		}
	})
}

// TestProtoEncodeFastMatchesRandomMetrics runs the fuzz target's check on
// a few thousand pseudo-random metrics in every test run.
func TestProtoEncodeFastMatchesRandomMetrics(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		data := make([]byte, rng.IntN(400))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		m := metricFromBytes(data)
		got, ok := appendMetricFast(nil, m, false)
		if want := slowMetricField(t, m); !ok || !bytes.Equal(got, want) {
			t.Fatalf("metric %v (ok %v):\nfast %x\nslow %x", m, ok, got, want)
		}
		if known, ok := appendMetricFast(nil, m, true); !ok || !bytes.Equal(known, got) {
			t.Fatalf("metric %v with known fields (ok %v):\n%x\nwant %x", m, ok, known, got)
		}
	}
}

// TestProtoEncodeFastMatchesTheBenchPayload checks every metric of the
// realistic push, and that the family body is the same either way.
func TestProtoEncodeFastMatchesTheBenchPayload(t *testing.T) {
	for _, mf := range payload.Families(3, 7) {
		for _, m := range mf.Metric {
			got, ok := appendMetricFast(nil, m, false)
			if !ok || !bytes.Equal(got, slowMetricField(t, m)) {
				t.Fatalf("family %s: fast encoding differs (ok %v)", mf.GetName(), ok)
			}
		}
	}
}

// TestProtoEncodeFastLeavesTheRestToProtoMarshal checks that every field it
// does not write makes it decline, so proto.Marshal keeps them.
func TestProtoEncodeFastLeavesTheRestToProtoMarshal(t *testing.T) {
	unknown := &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(1)}}
	unknownCreated := &timestamppb.Timestamp{Seconds: 1}
	unknownCreated.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 7, protowire.VarintType), 1))
	unknown.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 5))
	cases := map[string]*dto.Metric{
		"counter exemplar":       {Counter: &dto.Counter{Value: proto.Float64(1), Exemplar: &dto.Exemplar{Value: proto.Float64(1)}}},
		"created with unknown":   {Counter: &dto.Counter{Value: proto.Float64(1), CreatedTimestamp: unknownCreated}},
		"native schema":          {Histogram: &dto.Histogram{Schema: proto.Int32(3)}},
		"native zero threshold":  {Histogram: &dto.Histogram{ZeroThreshold: proto.Float64(0)}},
		"native zero count":      {Histogram: &dto.Histogram{ZeroCount: proto.Uint64(0)}},
		"native positive spans":  {Histogram: &dto.Histogram{PositiveSpan: []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(0)}}}},
		"native negative deltas": {Histogram: &dto.Histogram{NegativeDelta: []int64{1}}},
		"native exemplars":       {Histogram: &dto.Histogram{Exemplars: []*dto.Exemplar{{Value: proto.Float64(1)}}}},
		"bucket exemplar":        {Histogram: &dto.Histogram{Bucket: []*dto.Bucket{{Exemplar: &dto.Exemplar{Value: proto.Float64(1)}}}}},
		"unknown field":          unknown,
	}
	for name, m := range cases {
		if got, ok := appendMetricFast([]byte("x"), m, false); ok || string(got) != "x" {
			t.Errorf("%s: fast encoding accepted it (%x)", name, got)
		}
		mf := &dto.MetricFamily{Name: proto.String("m"), Type: dto.MetricType_UNTYPED.Enum(), Metric: []*dto.Metric{m}}
		body, err := appendMetricFields(nil, mf, false)
		if err != nil || !bytes.Equal(body, slowMetricField(t, m)) {
			t.Errorf("%s: the family body is not proto.Marshal's (err %v)", name, err)
		}
	}
}

func BenchmarkProtoEncodeMetrics(b *testing.B) {
	fams := payload.Families(1, 1)
	for _, tc := range []struct {
		name string
		fast bool
	}{{"fast", true}, {"proto.Marshal", false}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				buf = buf[:0]
				for _, mf := range fams {
					for _, m := range mf.Metric {
						if tc.fast {
							buf, _ = appendMetricFast(buf, m, false)
							continue
						}
						buf = append(buf, slowMetricField(b, m)...)
					}
				}
			}
		})
	}
}

// TestProtoEncodeFastTakesClientGolangMetrics checks what the Go client
// library pushes, created timestamps included, goes the fast way and comes
// out as proto.Marshal writes it.
func TestProtoEncodeFastTakesClientGolangMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobs_total", Help: "h"}, []string{"kind"})
	s := prometheus.NewSummary(prometheus.SummaryOpts{Name: "latency_seconds", Help: "h", Objectives: map[float64]float64{0.5: 0.05, 0.99: 0.001}})
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "size_bytes", Help: "h", Buckets: prometheus.ExponentialBuckets(1, 4, 6)})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "last_success", Help: "h"})
	reg.MustRegister(c, s, h, g)
	c.WithLabelValues("a").Add(3)
	c.WithLabelValues("b").Inc()
	for i := range 50 {
		s.Observe(float64(i) / 7)
		h.Observe(float64(i * i))
	}
	g.SetToCurrentTime()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	created := 0
	for _, mf := range fams {
		for _, m := range mf.Metric {
			if m.GetCounter().GetCreatedTimestamp() != nil || m.GetSummary().GetCreatedTimestamp() != nil || m.GetHistogram().GetCreatedTimestamp() != nil {
				created++
			}
			got, ok := appendMetricFast(nil, m, false)
			if want := slowMetricField(t, m); !ok || !bytes.Equal(got, want) {
				t.Fatalf("%s: fast encoding differs (ok %v):\nfast %x\nslow %x", mf.GetName(), ok, got, want)
			}
		}
	}
	if created == 0 {
		t.Fatal("no metric had a created timestamp: the test checks nothing of them")
	}
}
