package render

import (
	"bytes"
	"testing"

	"github.com/klauspost/compress/s2"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/exposition"
)

// TestFamiliesFollowingOneAnotherShareTheSkeleton: a fill given the
// skeleton another cache keeps shares its block, copies the value area,
// keeps the text body after the area, and reads back the family's bytes
// with its own values; the cache it took the skeleton from keeps its own.
func TestFamiliesFollowingOneAnotherShareTheSkeleton(t *testing.T) {
	gauge := func(v float64) (*dto.MetricFamily, []byte) {
		mf := &dto.MetricFamily{Name: proto.String("m"), Help: proto.String("H."), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{
			Label: []*dto.LabelPair{{Name: proto.String("job"), Value: proto.String("j")}},
			Gauge: &dto.Gauge{Value: proto.Float64(v)},
		}}}
		pb, err := exposition.AppendBody(nil, mf, exposition.NewFormat(exposition.EncodingProtobuf))
		if err != nil {
			t.Fatal(err)
		}
		return mf, pb
	}
	_, first := gauge(1.5)
	skeleton := bytes.Clone(first)
	area, ok := exposition.ExtractValues(nil, skeleton)
	if !ok || len(area) != 8 {
		t.Fatalf("ExtractValues gave %d bytes (%v), want one double", len(area), ok)
	}
	var buf []byte
	var one Cache
	one.FillBody(nil, true, exposition.EncodingProtobuf, SkeletonAndArea(NewSkeleton(EncodeInto(&buf, skeleton)), area), &Scratch{})
	skel, kept := one.Skeleton()
	if !kept {
		t.Fatal("a cache filled from a skeleton does not keep one")
	}
	if packed, _, _ := one.Pushed(); packed != nil {
		t.Errorf("a cache filled for protobuf holds a pushed body of %d bytes", len(packed))
	}

	mf, second := gauge(-2)
	area2, _ := exposition.ExtractValues(nil, bytes.Clone(second))
	text, err := exposition.AppendBody(nil, mf, exposition.NewFormat(exposition.EncodingText))
	if err != nil {
		t.Fatal(err)
	}
	var two Cache
	two.FillBody(text, true, exposition.EncodingText, SkeletonAndArea(skel, area2), &Scratch{})
	area2[0] ^= 0xff // the fill kept a copy

	pb1, a1 := one.Stored()
	pb2, a2 := two.Stored()
	if &pb1[0] != &pb2[0] || len(pb1) != len(pb2) {
		t.Error("the second cache copied the skeleton block instead of sharing it")
	}
	if &a1[0] == &a2[0] {
		t.Error("the two caches share a value area")
	}
	for _, c := range []struct {
		cache *Cache
		want  []byte
	}{{&one, first}, {&two, second}} {
		got, err := c.cache.AppendMetrics(nil)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("AppendMetrics gave %x (%v), want %x", got, err, c.want)
		}
	}
	packed, size, enc := two.Pushed()
	if enc != exposition.EncodingText || size != len(text) {
		t.Fatalf("pushed body of %d bytes in %v, want %d in text", size, enc, len(text))
	}
	if got, err := s2.Decode(nil, packed); err != nil || !bytes.Equal(got, text) {
		t.Errorf("pushed body %q (%v), want %q", got, err, text)
	}
	if got, ok := two.TextIn(exposition.EncodingText); !ok || !bytes.Equal(got, packed) {
		t.Error("TextIn does not return the pushed body of a cache kept as a skeleton")
	}
}
