package store

import (
	"context"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/pushgate/pushgate/exposition"
)

// floatHistogram is a native histogram family with float counts, which
// OpenMetrics 1.0 cannot express (the text format renders its classic part).
func floatHistogram(name string) *dto.MetricFamily {
	return &dto.MetricFamily{Name: proto.String(name), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{
		Histogram: &dto.Histogram{
			SampleCountFloat: proto.Float64(9.5), SampleSum: proto.Float64(12.5),
			Schema: proto.Int32(3), ZeroThreshold: proto.Float64(1e-128), ZeroCountFloat: proto.Float64(0.5),
			PositiveSpan:  []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(2)}},
			PositiveCount: []float64{1, 2.5},
		},
	}}}
}

// badExemplarCounter is a counter whose exemplar timestamp is invalid, which
// OpenMetrics refuses and the text format, which has no exemplars, ignores.
func badExemplarCounter(name string) *dto.MetricFamily {
	return &dto.MetricFamily{Name: proto.String(name), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{{
		Counter: &dto.Counter{Value: proto.Float64(1), Exemplar: &dto.Exemplar{
			Label: []*dto.LabelPair{{Name: proto.String("trace_id"), Value: proto.String("a")}},
			Value: proto.Float64(1), Timestamp: &timestamppb.Timestamp{Seconds: 1, Nanos: -1},
		}},
	}}}
}

func TestThePushOutcomeDoesNotDependOnTheFormatScrapedLast(t *testing.T) {
	for name, mf := range map[string]func() *dto.MetricFamily{
		"a float native histogram":                      func() *dto.MetricFamily { return floatHistogram("f") },
		"a counter whose exemplar timestamp is invalid": func() *dto.MetricFamily { return badExemplarCounter("c_total") },
	} {
		t.Run(name, func(t *testing.T) {
			outcome := map[exposition.Encoding]error{}
			for _, enc := range []exposition.Encoding{exposition.EncodingText, exposition.EncodingOpenMetrics} {
				s := New(Options{})
				sn := s.Snapshot()
				sn.RenderState().StartScrape(enc)
				sn.Release()
				_, outcome[enc] = s.Push(context.Background(), Push{Key: key("job", "j"), Families: []*dto.MetricFamily{mf()}, Time: t0})
			}
			if (outcome[exposition.EncodingText] == nil) != (outcome[exposition.EncodingOpenMetrics] == nil) {
				t.Errorf("after a text scrape the push gets %v, after an OpenMetrics scrape %v", outcome[exposition.EncodingText], outcome[exposition.EncodingOpenMetrics])
			}
		})
	}
}

func TestNewFamilyStoresWhatItCannotRenderInTheEncodingLastScraped(t *testing.T) {
	for _, enc := range []exposition.Encoding{exposition.EncodingText, exposition.EncodingOpenMetrics, exposition.EncodingProtobuf} {
		t.Run(enc.String(), func(t *testing.T) {
			mf := floatHistogram("f")
			f, err := newFamily(preparedFamily{mf: mf, series: []uint64{1}, plain: true}, t0, enc, false, nil)
			if err != nil {
				t.Fatalf("newFamily fails after a %s scrape: %v", enc, err)
			}
			got, err := f.Decode()
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got.Metric[0], mf.Metric[0]) {
				t.Errorf("stored %v, want %v", got.Metric[0], mf.Metric[0])
			}
		})
	}
}
