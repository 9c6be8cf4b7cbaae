package admission

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// exemplarMetric is a counter metric whose exemplar has the given label
// pairs (name, value, name, value, ...).
func exemplarMetric(pairs ...string) *dto.Metric {
	e := &dto.Exemplar{Value: proto.Float64(1)}
	for i := 0; i+1 < len(pairs); i += 2 {
		e.Label = append(e.Label, &dto.LabelPair{Name: proto.String(pairs[i]), Value: proto.String(pairs[i+1])})
	}
	return &dto.Metric{Counter: &dto.Counter{Value: proto.Float64(1), Exemplar: e}}
}

func TestCheckExemplars(t *testing.T) {
	bucketExemplar := &dto.Metric{Histogram: &dto.Histogram{
		SampleCount: proto.Uint64(1), SampleSum: proto.Float64(1),
		Bucket: []*dto.Bucket{{UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(1), Exemplar: exemplarMetric("", "x").Counter.Exemplar}},
	}}
	nativeExemplar := &dto.Metric{Histogram: &dto.Histogram{
		SampleCount: proto.Uint64(1), SampleSum: proto.Float64(1), Schema: proto.Int32(0),
		Exemplars: []*dto.Exemplar{exemplarMetric("", "x").Counter.Exemplar},
	}}
	cases := []struct {
		name    string
		m       *dto.Metric
		wantErr string
	}{
		{"a metric without exemplars passes", &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(1)}}, ""},
		{"a trace_id exemplar passes", exemplarMetric("trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"), ""},
		{"a dotted label name passes (scrapes escape it)", exemplarMetric("trace.id", "v"), ""},
		{"labels of exactly 128 code points pass", exemplarMetric("t", strings.Repeat("ü", 127)), ""},
		{"an empty label name is rejected", exemplarMetric("", "v"), `counter exemplar: invalid label name ""`},
		{"a label name that is not UTF-8 is rejected", exemplarMetric("\xff", "v"), `invalid label name "\xff"`},
		{"labels of 129 code points are rejected", exemplarMetric("t", strings.Repeat("ü", 128)), "129 code points, over OpenMetrics' 128"},
		{"a label value that is not UTF-8 is rejected", exemplarMetric("t", "\xff"), "not valid UTF-8"},
		{"a label name given twice is rejected", exemplarMetric("t", "1", "t", "2"), `label t appears twice`},
		{"a.b beside a_b is rejected", exemplarMetric("a.b", "1", "a_b", "2"), "escaping=underscores"},
		{"a bucket's exemplar is checked", bucketExemplar, "exemplar of bucket le=1"},
		{"a native histogram's exemplar is checked", nativeExemplar, `native histogram exemplar: invalid label name ""`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkExemplars(c.m)
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("got %v, want an error containing %q", err, c.wantErr)
			}
		})
	}
}
