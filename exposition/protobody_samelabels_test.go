package exposition

import (
	"slices"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// gaugeBody encodes a gauge family with one metric per label set (name,
// value, name, value, ...), each metric's value v.
func gaugeBody(t *testing.T, v float64, labelSets ...[]string) []byte {
	t.Helper()
	mf := &dto.MetricFamily{Name: proto.String("g"), Type: dto.MetricType_GAUGE.Enum()}
	for _, set := range labelSets {
		m := &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(v)}}
		for i := 0; i+1 < len(set); i += 2 {
			m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(set[i]), Value: proto.String(set[i+1])})
		}
		mf.Metric = append(mf.Metric, m)
	}
	body, err := AppendBody(nil, mf, NewFormat(EncodingProtobuf))
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// bodyLabels returns the labels ProtobufBodyLabels reads from body.
func bodyLabels(t *testing.T, body []byte) [][]string {
	t.Helper()
	var out [][]string
	if err := ProtobufBodyLabels(body, func(labels []LabelBytes) {
		var series []string
		for _, l := range labels {
			series = append(series, string(l.Name), string(l.Value))
		}
		out = append(out, series)
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSameProtobufLabels(t *testing.T) {
	a, b := []string{"job", "j", "x", "1"}, []string{"job", "j", "x", "2"}
	before := gaugeBody(t, 1, a, b)
	tests := []struct {
		name  string
		after []byte
		same  bool
	}{
		{"new values for the same labels", gaugeBody(t, 2, a, b), true},
		{"a changed label value", gaugeBody(t, 1, a, []string{"job", "j", "x", "3"}), false},
		{"a changed label name", gaugeBody(t, 1, a, []string{"job", "j", "y", "2"}), false},
		{"an added label", gaugeBody(t, 1, a, []string{"job", "j", "x", "2", "z", "1"}), false},
		{"a removed label", gaugeBody(t, 1, a, []string{"job", "j"}), false},
		{"an added series", gaugeBody(t, 1, a, b, []string{"job", "k"}), false},
		{"a removed series", gaugeBody(t, 1, a), false},
		{"reordered series", gaugeBody(t, 1, b, a), false},
		{"an empty value where there was none", gaugeBody(t, 1, a, []string{"job", "j", "x", "2", "z", ""}), false},
		{"no series", nil, false},
		{"a body cut short", before[:len(before)-1], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SameProtobufLabels(before, tt.after); got != tt.same {
				t.Errorf("SameProtobufLabels = %v, want %v", got, tt.same)
			}
			if got := SameProtobufLabels(tt.after, before); got != tt.same {
				t.Errorf("SameProtobufLabels with the bodies swapped = %v, want %v", got, tt.same)
			}
		})
	}
}

func TestSameProtobufLabelsHoldsOnlyWhenTheLabelsReadAreTheSame(t *testing.T) {
	sets := [][]string{{"job", "j"}, {"job", "j", "x", "1"}, {"job", "j", "x", ""}, {"job", "k"}, {}}
	var bodies [][]byte
	for _, x := range sets {
		for _, y := range sets {
			bodies = append(bodies, gaugeBody(t, 1, x, y), gaugeBody(t, 2, x))
		}
	}
	for _, a := range bodies {
		for _, b := range bodies {
			if SameProtobufLabels(a, b) && !slices.EqualFunc(bodyLabels(t, a), bodyLabels(t, b), slices.Equal) {
				t.Errorf("same labels reported for %q and %q", bodyLabels(t, a), bodyLabels(t, b))
			}
		}
	}
}

func TestEmptyBodiesHoldTheSameLabels(t *testing.T) {
	if !SameProtobufLabels(nil, []byte{}) {
		t.Error("two empty bodies differ")
	}
}
