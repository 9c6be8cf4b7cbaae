package exposition

import (
	"slices"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

func TestProtobufBodyLabelsReadsTheLabelsOfEveryMetric(t *testing.T) {
	lp := func(name, value string) *dto.LabelPair {
		return &dto.LabelPair{Name: proto.String(name), Value: proto.String(value)}
	}
	mf := &dto.MetricFamily{Name: proto.String("h"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{
		{Label: []*dto.LabelPair{lp("a", "1"), lp("b", "")}, Histogram: &dto.Histogram{SampleCount: proto.Uint64(1), SampleSum: proto.Float64(1),
			Bucket: []*dto.Bucket{{UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(1)}}}},
		{Histogram: &dto.Histogram{SampleCount: proto.Uint64(0), SampleSum: proto.Float64(0)}},
		{Label: []*dto.LabelPair{lp("x.y", "ü")}, Histogram: &dto.Histogram{SampleCount: proto.Uint64(2), SampleSum: proto.Float64(2)}},
	}}
	body, err := AppendBody(nil, mf, NewFormat(EncodingProtobuf))
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	if err := ProtobufBodyLabels(body, func(labels []LabelBytes) {
		var series []string
		for _, l := range labels {
			series = append(series, string(l.Name)+"="+string(l.Value))
		}
		got = append(got, series)
	}); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"a=1", "b="}, nil, {"x.y=ü"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("labels = %q, want %q", got, want)
	}
}

func TestProtobufBodyLabelsRefusesWhatIsNotABody(t *testing.T) {
	body, err := AppendBody(nil, &dto.MetricFamily{Name: proto.String("g"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{
		{Gauge: &dto.Gauge{Value: proto.Float64(1)}},
	}}, NewFormat(EncodingProtobuf))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"a body cut inside a metric", body[:len(body)-1]},
		{"an empty family name where a metric belongs", []byte{0x0a, 0x00}},
		{"a tag cut short", []byte{0x80}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := ProtobufBodyLabels(tc.body, func([]LabelBytes) {}); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestAnEmptyBodyHoldsOnlyLegacyExemplarNames(t *testing.T) {
	if !LegacyExemplarNamesInBody(nil) {
		t.Error("no bytes hold no exemplar, so no name to escape")
	}
}

func TestLegacyExemplarNamesInBodyAgreesWithTheDecodedFamily(t *testing.T) {
	ex := func(name string) *dto.Exemplar {
		return &dto.Exemplar{Label: []*dto.LabelPair{{Name: proto.String("a"), Value: proto.String("1")}, {Name: proto.String(name), Value: proto.String("2")}}, Value: proto.Float64(1)}
	}
	counter := func(name string) *dto.MetricFamily {
		return &dto.MetricFamily{Name: proto.String("c_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
			{Label: []*dto.LabelPair{{Name: proto.String("x"), Value: proto.String("1")}}, Counter: &dto.Counter{Value: proto.Float64(1)}},
			{Counter: &dto.Counter{Value: proto.Float64(1), Exemplar: ex(name)}},
		}}
	}
	bucket := func(name string) *dto.MetricFamily {
		return &dto.MetricFamily{Name: proto.String("h"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{Histogram: &dto.Histogram{
			SampleCount: proto.Uint64(1), SampleSum: proto.Float64(1),
			Bucket: []*dto.Bucket{{UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(1)}, {UpperBound: proto.Float64(2), CumulativeCount: proto.Uint64(1), Exemplar: ex(name)}},
		}}}}
	}
	native := func(name string) *dto.MetricFamily {
		mf := bucket("b")
		mf.Metric[0].Histogram.Exemplars = []*dto.Exemplar{ex("b"), ex(name)}
		return mf
	}
	for _, tc := range []struct {
		name string
		mf   *dto.MetricFamily
	}{
		{"a counter exemplar with a legacy name", counter("trace_id")},
		{"a counter exemplar with a dot", counter("trace.id")},
		{"a bucket exemplar with a legacy name", bucket("trace_id")},
		{"a bucket exemplar with a colon", bucket("x:y")},
		{"a native exemplar with a legacy name", native("trace_id")},
		{"a native exemplar with a non-ASCII letter", native("ü")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := AppendBody(nil, tc.mf, NewFormat(EncodingProtobuf))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := LegacyExemplarNamesInBody(b), LegacyExemplarNames(tc.mf); got != want {
				t.Errorf("LegacyExemplarNamesInBody = %v, LegacyExemplarNames = %v", got, want)
			}
		})
	}
}
