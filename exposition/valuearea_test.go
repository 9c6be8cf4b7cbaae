package exposition

import (
	"bytes"
	"math"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// valueFamily returns the stored protobuf bytes of one family of each kind
// a text push holds (a gauge, a histogram, a summary), with the values
// given: the doubles d (9 of them) and the counts c (4).
func valueFamily(t *testing.T, d [9]float64, c [4]uint64) [][]byte {
	t.Helper()
	lp := []*dto.LabelPair{{Name: proto.String("job"), Value: proto.String("j")}}
	fams := []*dto.MetricFamily{
		{Name: proto.String("g"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{
			{Label: lp, Gauge: &dto.Gauge{Value: proto.Float64(d[0])}},
			{Gauge: &dto.Gauge{Value: proto.Float64(d[1])}},
		}},
		{Name: proto.String("h"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{Label: lp, Histogram: &dto.Histogram{
			SampleCount: proto.Uint64(c[0]), SampleSum: proto.Float64(d[2]),
			Bucket: []*dto.Bucket{
				{CumulativeCount: proto.Uint64(c[1]), UpperBound: proto.Float64(0.5)},
				{CumulativeCount: proto.Uint64(c[2]), UpperBound: proto.Float64(math.Inf(1))},
			},
		}}}},
		{Name: proto.String("s"), Type: dto.MetricType_SUMMARY.Enum(), Metric: []*dto.Metric{{Label: lp, Summary: &dto.Summary{
			SampleCount: proto.Uint64(c[3]), SampleSum: proto.Float64(d[3]),
			Quantile: []*dto.Quantile{
				{Quantile: proto.Float64(0.5), Value: proto.Float64(d[4])},
				{Quantile: proto.Float64(0.9), Value: proto.Float64(d[5])},
			},
		}}}},
		{Name: proto.String("c"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
			{Label: lp, Counter: &dto.Counter{Value: proto.Float64(d[6])}},
		}},
		{Name: proto.String("u"), Type: dto.MetricType_UNTYPED.Enum(), Metric: []*dto.Metric{
			{Untyped: &dto.Untyped{Value: proto.Float64(d[7])}},
			{Label: lp, Untyped: &dto.Untyped{Value: proto.Float64(d[8])}},
		}},
	}
	out := make([][]byte, len(fams))
	for i, mf := range fams {
		b, err := AppendBody(nil, mf, NewFormat(EncodingProtobuf).WithKnownFields())
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// TestAValueAreaPutsTheBytesBackTogether takes a family's values out of
// its bytes (ExtractValues) and writes another push's values into the
// skeleton left (ApplyValues, AppendWithValues): the result must be the
// bytes of that push, whether its counts' varints keep their length or not.
func TestAValueAreaPutsTheBytesBackTogether(t *testing.T) {
	first := valueFamily(t, [9]float64{1, 2, 3, 4, 5, 6, 7, 8, 9}, [4]uint64{5, 1, 5, 100})
	for _, tc := range []struct {
		name    string
		d       [9]float64
		c       [4]uint64
		inPlace bool // every count's varint keeps its length
	}{
		{"new values, counts of the same lengths", [9]float64{-1, 0.25, 1e300, math.Inf(1), math.Inf(-1), math.NaN(), 1e9, math.Copysign(0, -1), 42}, [4]uint64{127, 0, 9, 1}, true},
		{"counts whose varints grow", [9]float64{1, 2, 3, 4, 5, 6, 7, 8, 9}, [4]uint64{128, 16384, 1 << 40, math.MaxUint64}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := valueFamily(t, tc.d, tc.c)
			for i := range first {
				skel := bytes.Clone(first[i])
				if _, ok := ExtractValues(nil, skel); !ok {
					t.Fatalf("family %d: ExtractValues refused its bytes", i)
				}
				area, ok := ExtractValues(nil, bytes.Clone(next[i]))
				if !ok {
					t.Fatalf("family %d: ExtractValues refused the next bytes", i)
				}
				got, ok := AppendWithValues([]byte("prefix"), skel, area)
				if !ok || !bytes.Equal(got[len("prefix"):], next[i]) || string(got[:len("prefix")]) != "prefix" {
					t.Errorf("family %d: AppendWithValues = %x (%v), want %x", i, got, ok, next[i])
				}
				inPlace := bytes.Clone(skel)
				ok = ApplyValues(inPlace, area)
				if ok && !bytes.Equal(inPlace, next[i]) {
					t.Errorf("family %d: ApplyValues wrote %x, want %x", i, inPlace, next[i])
				}
				// Only the families with counts can fail in place.
				if i == 1 || i == 2 {
					if ok != tc.inPlace {
						t.Errorf("family %d: ApplyValues = %v, want %v", i, ok, tc.inPlace)
					}
				} else if !ok {
					t.Errorf("family %d (no counts): ApplyValues failed", i)
				}
				// An area with a value short or one too many fits no skeleton.
				if _, ok := AppendWithValues(nil, skel, area[:len(area)-1]); ok {
					t.Errorf("family %d: an area one byte short was applied", i)
				}
				if _, ok := AppendWithValues(nil, skel, append(bytes.Clone(area), 0)); ok {
					t.Errorf("family %d: an area one byte long was applied", i)
				}
				if ApplyValues(bytes.Clone(skel), append(bytes.Clone(area), 0)) {
					t.Errorf("family %d: an area one byte long was applied in place", i)
				}
			}
		})
	}
}
