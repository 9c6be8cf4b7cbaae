package scrape

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/store"
)

func TestANativeHistogramPushedByProtobufComesOutIntactOnAProtobufScrape(t *testing.T) {
	hist := &dto.Histogram{
		SampleCount:   proto.Uint64(12),
		SampleSum:     proto.Float64(34.5),
		Schema:        proto.Int32(3),
		ZeroThreshold: proto.Float64(1e-128),
		ZeroCount:     proto.Uint64(1),
		PositiveSpan:  []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(2)}, {Offset: proto.Int32(3), Length: proto.Uint32(1)}},
		PositiveDelta: []int64{2, 1, -1},
		NegativeSpan:  []*dto.BucketSpan{{Offset: proto.Int32(-1), Length: proto.Uint32(1)}},
		NegativeDelta: []int64{4},
	}
	pushed := &dto.MetricFamily{
		Name:   proto.String("request_duration_seconds"),
		Help:   proto.String("Duration."),
		Type:   dto.MetricType_HISTOGRAM.Enum(),
		Metric: []*dto.Metric{{Histogram: hist}},
	}
	var body bytes.Buffer
	enc := expfmt.NewEncoder(&body, expfmt.NewFormat(expfmt.TypeProtoDelim))
	if err := enc.Encode(pushed); err != nil {
		t.Fatal(err)
	}
	decoded, err := exposition.Decode(&body, string(expfmt.NewFormat(expfmt.TypeProtoDelim)), exposition.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := newStore(store.Options{})
	if _, err := s.Push(context.Background(), store.Push{Key: storetest.Key("job", "native"), Families: decoded.Families, Time: t0}); err != nil {
		t.Fatal(err)
	}
	f := exposition.NewFormat(exposition.EncodingProtobuf)
	var out bytes.Buffer
	if _, err := s.Snapshot().write(&out, f, nil); err != nil {
		t.Fatal(err)
	}
	dec := expfmt.NewDecoder(&out, expfmt.Format(f.ContentType()))
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			if errors.Is(err, io.EOF) {
				t.Fatal("the native histogram is missing from the protobuf scrape")
			}
			t.Fatal(err)
		}
		if mf.GetName() != "request_duration_seconds" {
			continue
		}
		if len(mf.Metric) != 1 || !proto.Equal(mf.Metric[0].Histogram, hist) {
			t.Fatalf("histogram changed:\ngot  %v\nwant %v", mf.Metric[0].GetHistogram(), hist)
		}
		return
	}
}
