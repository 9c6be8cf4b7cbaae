// Package storetest holds fixtures for tests of the store and of what reads
// it (scrape, render), as net/http/httptest does for HTTP: test bodies
// parsed into families, grouping keys from label pairs, sample lookups, and
// families no scrape format can carry alike. It imports no package of the
// store's, so the store's own tests use it too.
package storetest

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
)

// Families parses a text exposition body into families for a test push,
// under the legacy name rules.
func Families(t testing.TB, text string) []*dto.MetricFamily {
	t.Helper()
	decoded, err := exposition.Decode(strings.NewReader(text), "", exposition.DecodeOptions{})
	if err != nil {
		t.Fatalf("decode test body: %v", err)
	}
	return decoded.Families
}

// Key returns the grouping key of the label pairs labels (name, value,
// name, value, ...).
func Key(labels ...string) groupkey.Key {
	m := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		m[labels[i]] = labels[i+1]
	}
	return groupkey.New(m)
}

// Value finds the sample value of the gauge, counter or untyped series of
// name with exactly labels in fams.
func Value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	mf := fams[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.Metric {
		if len(m.Label) != len(labels) {
			continue
		}
		for _, lp := range m.Label {
			if v, ok := labels[lp.GetName()]; !ok || v != lp.GetValue() {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		default:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// FloatHistogram is a native histogram family of float counts, which
// OpenMetrics 1.0 cannot carry.
func FloatHistogram(name string) *dto.MetricFamily {
	return &dto.MetricFamily{Name: proto.String(name), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{
		Histogram: &dto.Histogram{
			SampleCountFloat: proto.Float64(9.5), SampleSum: proto.Float64(12.5),
			Schema: proto.Int32(3), ZeroThreshold: proto.Float64(1e-128), ZeroCountFloat: proto.Float64(0.5),
			PositiveSpan:  []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(2)}},
			PositiveCount: []float64{1, 2.5},
		},
	}}}
}

// BadExemplarCounter is a counter whose exemplar timestamp is invalid,
// which OpenMetrics refuses and the text format, which has no exemplars,
// ignores.
func BadExemplarCounter(name string) *dto.MetricFamily {
	return &dto.MetricFamily{Name: proto.String(name), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{{
		Counter: &dto.Counter{Value: proto.Float64(1), Exemplar: &dto.Exemplar{
			Label: []*dto.LabelPair{{Name: proto.String("trace_id"), Value: proto.String("a")}},
			Value: proto.Float64(1), Timestamp: &timestamppb.Timestamp{Seconds: 1, Nanos: -1},
		}},
	}}}
}

// SameBlock reports whether a and b are one block of memory (the same
// start and length), not two equal copies.
func SameBlock(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
