package admission

import (
	"fmt"
	"hash/maphash"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/groupkey"
)

// gauges returns a gauge family named name with one metric per label value
// of label a.
func gauges(name string, values ...string) *dto.MetricFamily {
	mf := &dto.MetricFamily{Name: proto.String(name), Type: dto.MetricType_GAUGE.Enum()}
	for _, v := range values {
		mf.Metric = append(mf.Metric, &dto.Metric{Label: pairs("a", v), Gauge: &dto.Gauge{Value: proto.Float64(1)}})
	}
	return mf
}

// TestCheckWithReusesAScratchAndResetClearsIt checks a large push, then a
// small one and a refused one through one Scratch: each result holds its
// own push's label sets, and Reset leaves no label pair or family in the
// buffers, the large push's included.
func TestCheckWithReusesAScratchAndResetClearsIt(t *testing.T) {
	key := groupkey.New(map[string]string{"job": "j"})
	var sc Scratch
	many := make([]string, 100)
	for i := range many {
		many[i] = fmt.Sprint("v", i)
	}
	pushes := []struct {
		name    string
		fams    []*dto.MetricFamily
		refused bool
	}{
		{"a large push", []*dto.MetricFamily{gauges("big", many...)}, false},
		{"a small push", []*dto.MetricFamily{gauges("small", "x", "y")}, false},
		{"a refused push", []*dto.MetricFamily{gauges("dup", "z", "z")}, true},
	}
	for _, p := range pushes {
		out, err := CheckWith(key, p.fams, Options{Seed: maphash.MakeSeed()}, &sc)
		if p.refused {
			if err == nil {
				t.Fatalf("%s: accepted", p.name)
			}
		} else {
			if err != nil {
				t.Fatalf("%s: %v", p.name, err)
			}
			if len(out) != 1 || out[0].MF != p.fams[0] {
				t.Fatalf("%s: the result is not the push's family", p.name)
			}
			for i, m := range out[0].MF.Metric {
				if got, want := render(m.Label), "a="+p.fams[0].Metric[i].Label[0].GetValue()+",instance=,job=j"; got != want {
					t.Fatalf("%s: metric %d has labels %s, want %s", p.name, i, got, want)
				}
			}
		}
		sc.Reset()
		for i, lp := range sc.labels[:cap(sc.labels)] {
			if lp != nil {
				t.Fatalf("after %s, Reset left label pair %d in the buffer", p.name, i)
			}
		}
		for i, f := range sc.out[:cap(sc.out)] {
			if f.MF != nil || f.Series != nil {
				t.Fatalf("after %s, Reset left family %d in the buffer", p.name, i)
			}
		}
	}
}
