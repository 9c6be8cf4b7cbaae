package exposition

import (
	"bytes"
	"math"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// TestSetValuesWritesWhatTheEncoderWrites sets the values of a gauge
// family of two series, and those of a counter, to values of every
// spelling, and requires the bytes and the text and OpenMetrics bodies
// the encoder and the renderer write for the family with those values.
func TestSetValuesWritesWhatTheEncoderWrites(t *testing.T) {
	family := func(typ dto.MetricType, a, b float64) *dto.MetricFamily {
		mf := &dto.MetricFamily{Name: proto.String("m"), Type: typ.Enum()}
		for i, v := range []float64{a, b} {
			m := &dto.Metric{Label: []*dto.LabelPair{{Name: proto.String("i"), Value: proto.String([]string{"a b", "c"}[i])}}}
			switch typ {
			case dto.MetricType_GAUGE:
				m.Gauge = &dto.Gauge{Value: proto.Float64(v)}
			default:
				m.Counter = &dto.Counter{Value: proto.Float64(v)}
			}
			mf.Metric = append(mf.Metric, m)
		}
		return mf
	}
	values := []float64{0, math.Copysign(0, -1), 1, -1, 1.5, 1e6, 1700000001, 1.7000000015e9, 1e-7, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64}
	for _, typ := range []dto.MetricType{dto.MetricType_GAUGE, dto.MetricType_COUNTER} {
		old := family(typ, 42, 43)
		oldPB, _ := AppendBody(nil, old, storedFormat())
		for i, a := range values {
			b := values[(i+3)%len(values)]
			want := family(typ, a, b)
			wantPB, _ := AppendBody(nil, want, storedFormat())
			got, ok := SetValues(nil, oldPB, []float64{a, b})
			if !ok || !bytes.Equal(got, wantPB) {
				t.Fatalf("%s %v, %v: SetValues %x (%v), want %x", typ, a, b, got, ok, wantPB)
			}
			for _, enc := range []Encoding{EncodingText, EncodingOpenMetrics} {
				oldText, err := AppendBody(nil, old, NewFormat(enc))
				if err != nil {
					t.Fatal(err)
				}
				wantText, _ := AppendBody(nil, want, NewFormat(enc))
				gotText, ok := SetTextValues(nil, oldText, enc, []float64{a, b})
				if !ok || !bytes.Equal(gotText, wantText) {
					t.Fatalf("%s %v, %v as %s: SetTextValues\n%s(%v), want\n%s", typ, a, b, enc, gotText, ok, wantText)
				}
			}
		}
	}
	// Not a value for every field, or a count among them: refused.
	h := &dto.MetricFamily{Name: proto.String("h"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{
		Histogram: &dto.Histogram{SampleCount: proto.Uint64(1), SampleSum: proto.Float64(1)}}}}
	hb, _ := AppendBody(nil, h, storedFormat())
	if _, ok := SetValues(nil, hb, []float64{1, 2}); ok {
		t.Error("SetValues set a histogram's count")
	}
	g, _ := AppendBody(nil, family(dto.MetricType_GAUGE, 1, 2), storedFormat())
	if _, ok := SetValues(nil, g, []float64{1}); ok {
		t.Error("SetValues took one value for two fields")
	}
}
