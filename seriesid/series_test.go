package seriesid

import (
	"hash/maphash"
	"slices"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// pairs builds label pairs from name, value, name, value, ...
func pairs(nv ...string) []*dto.LabelPair {
	out := make([]*dto.LabelPair, 0, len(nv)/2)
	for i := 0; i+1 < len(nv); i += 2 {
		out = append(out, &dto.LabelPair{Name: proto.String(nv[i]), Value: proto.String(nv[i+1])})
	}
	return out
}

func TestHash(t *testing.T) {
	tests := []struct {
		name   string
		a, b   []*dto.LabelPair
		aName  string
		bName  string
		sameID bool
	}{
		{"an empty label value is the same as no label", pairs("a", ""), nil, "m", "m", true},
		{"an empty value among others is left out", pairs("a", "1", "b", "", "c", "2"), pairs("a", "1", "c", "2"), "m", "m", true},
		{"different values are different series", pairs("a", "1"), pairs("a", "2"), "m", "m", false},
		{"a label's name and value are kept apart", pairs("a", "bc"), pairs("ab", "c"), "m", "m", false},
		{"the metric name is part of the series", pairs("a", "1"), pairs("a", "1"), "m", "n", false},
	}
	seed := maphash.MakeSeed()
	var h maphash.Hash
	h.SetSeed(seed)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := Hash(&h, tt.aName, tt.a), Hash(&h, tt.bName, tt.b)
			if (a == b) != tt.sameID {
				t.Errorf("Hash(%s) == Hash(%s) is %v, want %v", String(tt.aName, tt.a), String(tt.bName, tt.b), a == b, tt.sameID)
			}
		})
	}
}

func TestHashLabelHashesBytesAsStrings(t *testing.T) {
	seed := maphash.MakeSeed()
	var h maphash.Hash
	h.SetSeed(seed)
	want := Hash(&h, "m", pairs("a", "1", "b", ""))
	h.Reset()
	h.WriteString("m")
	HashLabel(&h, []byte("a"), []byte("1"))
	HashLabel(&h, []byte("b"), []byte(""))
	if got := h.Sum64(); got != want {
		t.Errorf("a series hashed from bytes = %x, from label pairs = %x", got, want)
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		name   string
		metric string
		labels []*dto.LabelPair
		want   string
	}{
		{"legacy names are written bare", "m", pairs("a", "x"), `m{a="x"}`},
		{"a series without labels has empty braces", "m", nil, `m{}`},
		{"names that are not legacy names are quoted", "m.x", pairs("a.b", "v\n"), `"m.x"{"a.b"="v\n"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := String(tt.metric, tt.labels); got != tt.want {
				t.Errorf("String = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestFamilyLabelNamesAreDistinctAndSorted(t *testing.T) {
	mf := &dto.MetricFamily{Metric: []*dto.Metric{{Label: pairs("b", "1", "a", "1")}, {Label: pairs("c", "", "a", "2")}}}
	got := FamilyLabelNames(mf)
	if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("FamilyLabelNames = %q, want %q", got, want)
	}
}
