package seriesid

import (
	"hash/maphash"
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
	var f Family
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.Start(seed, tt.aName, false)
			a := f.Series(tt.a)
			f.Start(seed, tt.bName, false)
			b := f.Series(tt.b)
			if (a == b) != tt.sameID {
				t.Errorf("%s and %s hash alike: %v, want %v", String(tt.aName, tt.a), String(tt.bName, tt.b), a == b, tt.sameID)
			}
		})
	}
}

func TestHashLabelHashesASeriesAsAFamilyDoes(t *testing.T) {
	seed := maphash.MakeSeed()
	var f Family
	f.Start(seed, "m", false)
	want := f.Series(pairs("a", "1", "b", ""))
	var h maphash.Hash
	h.SetSeed(seed)
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
