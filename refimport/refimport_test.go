package refimport

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/journal/gobfile"
	"github.com/pushgate/pushgate/scrape"
	"github.com/pushgate/pushgate/store"
)

// refGroup builds a group of a reference persistence file: grouping labels
// (name, value pairs), its push times (0: never) and pushed gauges, each
// given as name=value and stored, like the reference stores them, with the
// grouping labels and instance.
func refGroup(labels []string, pushed, failed float64, gauges ...string) gobfile.Group {
	gl := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		gl[labels[i]] = labels[i+1]
	}
	at := time.Unix(int64(max(pushed, failed)), 0)
	gauge := func(name string, v float64) gobfile.Family {
		m := &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(v)}}
		if _, ok := gl["instance"]; !ok {
			m.Label = append(m.Label, &dto.LabelPair{Name: proto.String("instance"), Value: proto.String("")})
		}
		for n, v := range gl {
			m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(n), Value: proto.String(v)})
		}
		return gobfile.Family{LastPush: at, Family: &dto.MetricFamily{Name: proto.String(name), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{m}}}
	}
	g := gobfile.Group{Labels: gl, Families: []gobfile.Family{gauge(store.PushTimeName, pushed), gauge(store.PushFailureTimeName, failed)}}
	for _, nv := range gauges {
		name, v, _ := strings.Cut(nv, "=")
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			panic(err)
		}
		g.Families = append(g.Families, gauge(name, f))
	}
	return g
}

func TestImportKeepsPushedDataAndReportsEveryDroppedGroupByKey(t *testing.T) {
	const t0, t1, t2 = 1_700_000_000, 1_700_000_100, 1_700_000_200
	cases := []struct {
		name   string
		groups []gobfile.Group
		// want are series the scrape must hold, as name{labels} value.
		want []string
		// absent are series it must not hold.
		absent []string
		// logged are texts the warnings must hold.
		logged []string
		result Result
	}{
		{
			name: "the reference's poisoning case keeps the group with data and drops the empty failure-only one",
			groups: []gobfile.Group{
				refGroup([]string{"job", "s1"}, t0, 0, "m=1"),
				refGroup([]string{"job", "s1", "instance", ""}, 0, t1),
			},
			want:   []string{`m{instance="",job="s1"} 1`, `push_time_seconds{instance="",job="s1"} 1.7e+09`},
			logged: []string{`msg="imported group dropped" group="{instance=\"\",job=\"s1\"}" reason="it holds only push times`},
			result: Result{Groups: 1, DroppedGroups: 1},
		},
		{
			name: "a group conflicting on one family keeps its other families",
			groups: []gobfile.Group{
				refGroup([]string{"job", "a", "instance", "i"}, t2, 0, "x=1"),
				withInstance(refGroup([]string{"job", "a"}, t1, 0, "x=2", "y=2"), "x", "i"),
			},
			want:   []string{`x{instance="i",job="a"} 1`, `y{instance="",job="a"} 2`},
			absent: []string{`x{instance="i",job="a"} 2`},
			logged: []string{`msg="imported family dropped" group="{job=\"a\"}" family=x`},
			result: Result{Groups: 1, Partial: 1, DroppedFamilies: 1},
		},
		{
			name: "the most recently pushed of two conflicting groups wins",
			groups: []gobfile.Group{
				withInstance(refGroup([]string{"job", "b"}, t0, 0, "x=1"), "x", "i"),
				refGroup([]string{"job", "b", "instance", "i"}, t2, 0, "x=2"),
			},
			want:   []string{`x{instance="i",job="b"} 2`},
			logged: []string{`msg="imported family dropped" group="{job=\"b\"}" family=x`},
			result: Result{Groups: 1, Partial: 1, DroppedFamilies: 1},
		},
		{
			name: "groups that are one group to Prometheus are merged where their families fit",
			groups: []gobfile.Group{
				refGroup([]string{"job", "s2"}, t1, 0, "p=1", "shared=1"),
				refGroup([]string{"job", "s2", "instance", ""}, t2, 0, "q=2", "shared=2"),
			},
			want:   []string{`p{instance="",job="s2"} 1`, `q{instance="",job="s2"} 2`, `shared{instance="",job="s2"} 2`},
			absent: []string{`shared{instance="",job="s2"} 1`},
			logged: []string{`msg="imported group merged into the same group to Prometheus" group="{job=\"s2\"}"`, `family=shared`},
			result: Result{Groups: 1, Merged: 1, DroppedFamilies: 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			st := store.New(store.Options{})
			res := Import(st, tc.groups, slog.New(slog.NewTextHandler(&logs, nil)))
			if res != tc.result {
				t.Errorf("result %+v, want %+v", res, tc.result)
			}
			text := scrapeText(t, st)
			for _, w := range tc.want {
				if !strings.Contains(text, w+"\n") {
					t.Errorf("the scrape lacks %s:\n%s", w, text)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(text, a+"\n") {
					t.Errorf("the scrape holds %s", a)
				}
			}
			for _, l := range tc.logged {
				if !strings.Contains(logs.String(), l) {
					t.Errorf("the log lacks %s:\n%s", l, logs.String())
				}
			}
		})
	}
}

// withInstance gives family name of g the label instance=v, as a body
// label beside a grouping key without instance.
func withInstance(g gobfile.Group, name, v string) gobfile.Group {
	for _, f := range g.Families {
		if f.Family.GetName() != name {
			continue
		}
		for _, lp := range f.Family.Metric[0].Label {
			if lp.GetName() == "instance" {
				lp.Value = proto.String(v)
			}
		}
	}
	return g
}

// scrapeText renders st in the text format and checks that expfmt parses it.
func scrapeText(t *testing.T, st *store.Store) string {
	t.Helper()
	sn := st.Snapshot()
	defer sn.Release()
	var buf bytes.Buffer
	if _, err := scrape.NewWriter().Write(&buf, sn, exposition.NewFormat(exposition.EncodingText), nil); err != nil {
		t.Fatalf("scrape: %v", err)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	if _, err := parser.TextToMetricFamilies(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("scrape does not parse: %v\n%s", err, buf.String())
	}
	return buf.String()
}
