package store

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/journal"
)

// reuseFamily builds family m of type typ with one metric per label set
// (name, value, ...), each of value v; a counter's metrics carry an
// exemplar with label exemplarLabel when it is not "".
func reuseFamily(typ dto.MetricType, v float64, exemplarLabel string, labelSets ...[]string) []*dto.MetricFamily {
	mf := &dto.MetricFamily{Name: proto.String("m"), Type: typ.Enum()}
	for _, set := range labelSets {
		m := &dto.Metric{}
		for i := 0; i+1 < len(set); i += 2 {
			m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(set[i]), Value: proto.String(set[i+1])})
		}
		switch typ {
		case dto.MetricType_COUNTER:
			m.Counter = &dto.Counter{Value: proto.Float64(v)}
			if exemplarLabel != "" {
				m.Counter.Exemplar = &dto.Exemplar{Label: []*dto.LabelPair{{Name: proto.String(exemplarLabel), Value: proto.String("t")}}, Value: proto.Float64(v)}
			}
		default:
			m.Gauge = &dto.Gauge{Value: proto.Float64(v)}
		}
		mf.Metric = append(mf.Metric, m)
	}
	return []*dto.MetricFamily{mf}
}

// pushedRecords pushes each of pushes in turn into a fresh store and
// returns the record of the group after each.
func pushedRecords(t *testing.T, utf8Names bool, pushes ...[]*dto.MetricFamily) []journal.Op {
	t.Helper()
	src := New(Options{UTF8Names: utf8Names})
	k := storetest.Key("job", "j")
	var ops []journal.Op
	for i, fams := range pushes {
		if _, err := src.Push(context.Background(), Push{Key: k, Method: Replace, Families: fams, Time: t0.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
		ops = append(ops, journal.Op{Kind: journal.OpSet, Key: k.ID(), Value: testRecord(t, src.Group(k))})
	}
	return ops
}

// checkRebuiltAlike checks that every family of group gid in got has the
// series hashes, label names and plainness of want's, and that both
// serve the same bytes.
func checkRebuiltAlike(t *testing.T, got, want *Store, gid string) {
	t.Helper()
	g, w := got.committedGroup(gid), want.committedGroup(gid)
	if len(g.families) != len(w.families) {
		t.Fatalf("%d families, want %d", len(g.families), len(w.families))
	}
	for _, wf := range w.families {
		name := wf.Name()
		gf := g.families.get(name)
		if gf == nil {
			t.Errorf("family %q missing", name)
			continue
		}
		if !slices.Equal(gf.series(), wf.series()) {
			t.Errorf("%s: series %x, derived afresh %x", name, gf.series(), wf.series())
		}
		if !slices.Equal(gf.labelNames(), wf.labelNames()) {
			t.Errorf("%s: label names %q, derived afresh %q", name, gf.labelNames(), wf.labelNames())
		}
		if gf.cache.Plain() != wf.cache.Plain() {
			t.Errorf("%s: plain %v, derived afresh %v", name, gf.cache.Plain(), wf.cache.Plain())
		}
	}
	for _, enc := range []exposition.Encoding{exposition.EncodingText, exposition.EncodingOpenMetrics, exposition.EncodingProtobuf} {
		if a, b := scrapeBytes(t, got, enc), scrapeBytes(t, want, enc); !bytes.Equal(a, b) {
			t.Errorf("%s scrape differs from the store that derived it afresh:\n%s\nwant:\n%s", enc, a, b)
		}
	}
}

func TestAFollowerTakesOnlyWhatARePushLeftUnchanged(t *testing.T) {
	gauge, counter := dto.MetricType_GAUGE, dto.MetricType_COUNTER
	a, b := []string{"x", "1"}, []string{"x", "2"}
	tests := []struct {
		name          string
		utf8Names     bool
		before, after []*dto.MetricFamily
		reused        bool
	}{
		{"new values for the same label sets", false, reuseFamily(gauge, 1, "", a, b), reuseFamily(gauge, 2, "", a, b), true},
		{"a changed label value", false, reuseFamily(gauge, 1, "", a, b), reuseFamily(gauge, 2, "", a, []string{"x", "3"}), false},
		{"a changed label name", false, reuseFamily(gauge, 1, "", a, b), reuseFamily(gauge, 2, "", a, []string{"y", "2"}), false},
		{"an added series", false, reuseFamily(gauge, 1, "", a), reuseFamily(gauge, 2, "", a, b), false},
		{"a removed series", false, reuseFamily(gauge, 1, "", a, b), reuseFamily(gauge, 2, "", a), false},
		{"reordered series", false, reuseFamily(gauge, 1, "", a, b), reuseFamily(gauge, 2, "", b, a), false},
		{"a changed type", false, reuseFamily(gauge, 1, "", a, b), reuseFamily(counter, 2, "", a, b), false},
		{"new values under UTF-8 label names", true, reuseFamily(gauge, 1, "", []string{"x.y", "1"}), reuseFamily(gauge, 2, "", []string{"x.y", "1"}), true},
		{"a changed UTF-8 label name", true, reuseFamily(gauge, 1, "", []string{"x.y", "1"}), reuseFamily(gauge, 2, "", []string{"x.z", "1"}), false},
		{"an exemplar label name that is no legacy name any more", true, reuseFamily(counter, 1, "trace", a), reuseFamily(counter, 2, "trace.id", a), true},
		{"an exemplar label name that is a legacy name again", true, reuseFamily(counter, 1, "trace.id", a), reuseFamily(counter, 2, "trace", a), false},
		{"a counter with a UTF-8 exemplar label name becoming a gauge", true, reuseFamily(counter, 1, "trace.id", a), reuseFamily(gauge, 2, "", a), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops := pushedRecords(t, tt.utf8Names, tt.before, tt.after)
			follower := New(Options{UTF8Names: tt.utf8Names})
			for i, op := range ops {
				var held *Family
				if i > 0 {
					held = follower.committedGroup(op.Key).families.get("m")
				}
				if err := follower.Apply(journal.Position(i+1), []journal.Op{op}); err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					continue
				}
				got := follower.committedGroup(op.Key).families.get("m")
				if reused := &got.series()[0] == &held.series()[0]; reused != tt.reused {
					t.Errorf("series taken from the family replaced: %v, want %v", reused, tt.reused)
				}
				// A store that derives the same record afresh, under the
				// follower's seed.
				fresh := New(Options{UTF8Names: tt.utf8Names})
				fresh.seed = follower.seed
				if err := fresh.Apply(1, []journal.Op{op}); err != nil {
					t.Fatal(err)
				}
				checkRebuiltAlike(t, follower, fresh, op.Key)
			}
		})
	}
}

func TestAFollowerReusesTheSeriesOfARePushedFamily(t *testing.T) {
	a, b := []string{"x", "1"}, []string{"x", "2"}
	ops := pushedRecords(t, false, reuseFamily(dto.MetricType_GAUGE, 1, "", a, b), reuseFamily(dto.MetricType_GAUGE, 2, "", a, b))
	follower := New(Options{})
	if err := follower.Apply(1, ops[:1]); err != nil {
		t.Fatal(err)
	}
	before := follower.committedGroup(ops[0].Key).families.get("m")
	if err := follower.Apply(2, ops[1:]); err != nil {
		t.Fatal(err)
	}
	after := follower.committedGroup(ops[0].Key).families.get("m")
	if after == before {
		t.Fatal("the re-pushed family was not rebuilt")
	}
	if len(after.series()) == 0 || &after.series()[0] != &before.series()[0] {
		t.Error("the re-pushed family's series were hashed again, not taken from the family it replaces")
	}
}

// TestAFollowerKnowsARePushByTheDigestOfItsLabels checks that a group
// rebuilt from a record keeps the digest of its label sets, and that the
// next record of the same label sets takes the families' identity from
// that digest alone: the families it replaces are not read (their blocks
// are made unreadable here), which a comparison of their labels would
// need.
func TestAFollowerKnowsARePushByTheDigestOfItsLabels(t *testing.T) {
	a, b := []string{"x", "1"}, []string{"x", "2"}
	ops := pushedRecords(t, false,
		reuseFamily(dto.MetricType_GAUGE, 1, "", a, b),
		reuseFamily(dto.MetricType_GAUGE, 2, "", a, b),
		reuseFamily(dto.MetricType_GAUGE, 3, "", a, []string{"x", "3"}))
	follower := New(Options{})
	if err := follower.Apply(1, ops[:1]); err != nil {
		t.Fatal(err)
	}
	g := follower.committedGroup(ops[0].Key)
	if g.labels == 0 {
		t.Fatal("a group rebuilt from its record keeps no digest of its labels")
	}
	before := g.families.get("m")
	before.cache.SetProtobuf([]byte{0xff}) // read only by a comparison of labels
	if err := follower.Apply(2, ops[1:2]); err != nil {
		t.Fatal(err)
	}
	after := follower.committedGroup(ops[0].Key).families.get("m")
	if &after.series()[0] != &before.series()[0] {
		t.Error("the re-push's series were derived again, not known from the digest of its labels")
	}
	if err := follower.Apply(3, ops[2:]); err != nil {
		t.Fatal(err)
	}
	last := follower.committedGroup(ops[0].Key)
	if &last.families.get("m").series()[0] == &after.series()[0] {
		t.Error("a push of other label sets kept the series of the last")
	}
	if last.labels == g.labels {
		t.Error("other label sets have the digest of the last")
	}
}
