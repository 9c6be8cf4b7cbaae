package store

import (
	"context"
	"slices"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/internal/storetest"
)

// identityTestFamilies returns families whose identity a push and a
// restore must derive alike: the bench payload, and under the UTF-8 name
// rules dotted metric, label and exemplar label names.
func identityTestFamilies(utf8Names bool) []*dto.MetricFamily {
	fams := payload.Families(3, 1)
	if !utf8Names {
		return fams
	}
	lp := func(name, value string) *dto.LabelPair {
		return &dto.LabelPair{Name: proto.String(name), Value: proto.String(value)}
	}
	return append(fams,
		&dto.MetricFamily{Name: proto.String("room.temperature"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{
			{Label: []*dto.LabelPair{lp("room.name", "kitchen")}, Gauge: &dto.Gauge{Value: proto.Float64(21)}},
		}},
		&dto.MetricFamily{Name: proto.String("served_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
			{Label: []*dto.LabelPair{lp("path", "/")}, Counter: &dto.Counter{Value: proto.Float64(1),
				Exemplar: &dto.Exemplar{Label: []*dto.LabelPair{lp("trace.id", "abc")}, Value: proto.Float64(1)}}},
		}},
	)
}

func TestARestoredFamilyHasThePushedFamilysIdentity(t *testing.T) {
	for _, utf8Names := range []bool{false, true} {
		src := New(Options{UTF8Names: utf8Names})
		k := storetest.Key("job", "j", "instance", "i")
		if _, err := src.Push(context.Background(), Push{Key: k, Method: Replace, Families: identityTestFamilies(utf8Names), Time: t0}); err != nil {
			t.Fatal(err)
		}
		dst := New(Options{UTF8Names: utf8Names})
		// Hashes compare under one seed only.
		dst.seed = src.seed
		if err := dst.Restore(k.ID(), testRecord(t, src.Group(k))); err != nil {
			t.Fatal(err)
		}
		pushed, restored := src.Group(k), dst.Group(k)
		for _, pf := range pushed.families {
			name := pf.Name()
			rf := restored.families.get(name)
			if rf == nil {
				t.Errorf("utf8Names=%v: family %q not restored", utf8Names, name)
				continue
			}
			if !slices.Equal(rf.series(), pf.series()) {
				t.Errorf("utf8Names=%v %s: restored series %x, pushed %x", utf8Names, name, rf.series(), pf.series())
			}
			if !slices.Equal(rf.labelNames(), pf.labelNames()) {
				t.Errorf("utf8Names=%v %s: restored label names %q, pushed %q", utf8Names, name, rf.labelNames(), pf.labelNames())
			}
			if rf.cache.Plain() != pf.cache.Plain() {
				t.Errorf("utf8Names=%v %s: restored plain %v, pushed %v", utf8Names, name, rf.cache.Plain(), pf.cache.Plain())
			}
		}
	}
}
