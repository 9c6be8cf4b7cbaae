package exposition

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/bench/payload"
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
	// Label pairs of 1-, 2- and 3-byte lengths.
	long, huge := strings.Repeat("l", 200), strings.Repeat("h", 20_000)
	a, b := []string{"job", "j", "x", "1"}, []string{"job", "j", "x", "2", "y", long, "z", huge}
	before := gaugeBody(t, 1, a, b)
	tests := []struct {
		name  string
		after []byte
		same  bool
	}{
		{"new values for the same labels", gaugeBody(t, 2, a, b), true},
		{"a changed label value", gaugeBody(t, 1, a, []string{"job", "j", "x", "3", "y", long, "z", huge}), false},
		{"a changed long label value", gaugeBody(t, 1, a, []string{"job", "j", "x", "2", "y", long + "!", "z", huge}), false},
		{"a changed huge label value", gaugeBody(t, 1, a, []string{"job", "j", "x", "2", "y", long, "z", huge[1:] + "!"}), false},
		{"a changed label name", gaugeBody(t, 1, a, []string{"job", "j", "w", "2", "y", long, "z", huge}), false},
		{"an added label", gaugeBody(t, 1, a, []string{"job", "j", "x", "2", "y", long, "z", huge, "zz", "1"}), false},
		{"a removed label", gaugeBody(t, 1, a, []string{"job", "j", "x", "2", "y", long}), false},
		{"an added series", gaugeBody(t, 1, a, b, []string{"job", "k"}), false},
		{"a removed series", gaugeBody(t, 1, a), false},
		{"reordered series", gaugeBody(t, 1, b, a), false},
		{"an empty value where there was none", gaugeBody(t, 1, a, []string{"job", "j", "x", "2", "y", long, "z", huge, "zz", ""}), false},
		{"no series", nil, false},
		{"a body cut short", before[:len(before)-1], false},
		{"a body cut inside a long label", before[:len(before)-len(huge)-30], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SameProtobufLabels(before, tt.after); got != tt.same {
				t.Errorf("SameProtobufLabels = %v, want %v", got, tt.same)
			}
			if got := SameProtobufLabels(tt.after, before); got != tt.same {
				t.Errorf("SameProtobufLabels with the bodies swapped = %v, want %v", got, tt.same)
			}
			if got := sameLabelRuns(before, tt.after); got != tt.same {
				t.Errorf("AppendLabelRuns appended alike for both: %v, want %v", got, tt.same)
			}
		})
	}
}

func TestSameProtobufLabelsHoldsOnlyWhenTheLabelsReadAreTheSame(t *testing.T) {
	sets := [][]string{{"job", "j"}, {"job", "j", "x", "1"}, {"job", "j", "x", ""}, {"job", "k"}, {}, {"job", strings.Repeat("j", 130)}, {"job", strings.Repeat("j", 131)}}
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

// BenchmarkSameProtobufLabels measures comparing the labels of every
// family of a re-push of the bench payload with the previous push's, as a
// cluster follower applying it does.
func BenchmarkSameProtobufLabels(b *testing.B) {
	type pair struct{ before, after []byte }
	var pairs []pair
	for i, mf := range payload.Families(7, 1) {
		before, err := AppendBody(nil, mf, NewFormat(EncodingProtobuf))
		if err != nil {
			b.Fatal(err)
		}
		after, err := AppendBody(nil, payload.Families(7, 2)[i], NewFormat(EncodingProtobuf))
		if err != nil {
			b.Fatal(err)
		}
		pairs = append(pairs, pair{before, after})
	}
	for b.Loop() {
		for _, p := range pairs {
			if !SameProtobufLabels(p.before, p.after) {
				b.Fatal("the re-push's labels differ")
			}
		}
	}
}

// FuzzSameProtobufLabels checks, on any two byte strings, that the same
// labels are reported only when, if a's labels read, b's read alike, and
// exactly when AppendLabelRuns reads both and appends alike.
func FuzzSameProtobufLabels(f *testing.F) {
	t := &testing.T{}
	f.Add(gaugeBody(t, 1, []string{"job", "j"}), gaugeBody(t, 2, []string{"job", "j"}))
	f.Add(gaugeBody(t, 1, []string{"job", strings.Repeat("j", 200)}), gaugeBody(t, 2, []string{"job", "j"}))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if same, runs := SameProtobufLabels(a, b), sameLabelRuns(a, b); same != runs {
			t.Fatalf("SameProtobufLabels = %v, but AppendLabelRuns appended alike for both: %v", same, runs)
		}
		if !SameProtobufLabels(a, b) {
			return
		}
		la, err := readLabels(a)
		if err != nil {
			return
		}
		lb, err := readLabels(b)
		if err != nil {
			t.Fatalf("same labels reported for a body whose labels read and one whose do not: %v", err)
		}
		if !slices.EqualFunc(la, lb, slices.Equal) {
			t.Fatalf("same labels reported for %q and %q", la, lb)
		}
	})
}

// readLabels returns the labels ProtobufBodyLabels reads from body.
func readLabels(body []byte) ([][]string, error) {
	var out [][]string
	err := ProtobufBodyLabels(body, func(labels []LabelBytes) {
		var series []string
		for _, l := range labels {
			series = append(series, string(l.Name), string(l.Value))
		}
		out = append(out, series)
	})
	return out, err
}

// sameLabelRuns reports whether AppendLabelRuns reads both a and b and
// appends the same bytes for them.
func sameLabelRuns(a, b []byte) bool {
	ra, okA := AppendLabelRuns(nil, a)
	rb, okB := AppendLabelRuns(nil, b)
	return okA && okB && bytes.Equal(ra, rb)
}
