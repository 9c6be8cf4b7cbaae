package otlp

import (
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

func TestGroupKeys(t *testing.T) {
	cases := []struct {
		name      string
		resource  []string
		urlLabels map[string]string
		groupBy   []string
		want      map[string]string
	}{
		{"job is service.name", []string{"service.name", "svc"}, nil, nil, map[string]string{"job": "svc"}},
		{"job is service.namespace/service.name", []string{"service.name", "svc", "service.namespace", "ns"}, nil, nil, map[string]string{"job": "ns/svc"}},
		{"service.instance.id is not in the key by default", []string{"service.name", "svc", "service.instance.id", "uuid-1"}, nil, nil, map[string]string{"job": "svc"}},
		{"service.instance.id named in group-by is instance", []string{"service.name", "svc", "service.instance.id", "uuid-1"}, nil, []string{"service.instance.id"}, map[string]string{"job": "svc", "instance": "uuid-1"}},
		{"a group-by attribute is named as a label", []string{"service.name", "svc", "deployment.environment", "prod"}, nil, []string{"deployment.environment"}, map[string]string{"job": "svc", "deployment_environment": "prod"}},
		{"an absent group-by attribute is left out", []string{"service.name", "svc"}, nil, []string{"deployment.environment"}, map[string]string{"job": "svc"}},
		{"the URL's labels win over the resource", []string{"service.name", "svc"}, map[string]string{"job": "batch", "instance": "a"}, []string{"service.instance.id"}, map[string]string{"job": "batch", "instance": "a"}},
		{"the URL's labels need no service.name", nil, map[string]string{"job": "batch"}, nil, map[string]string{"job": "batch"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			md, ms := request(c.resource...)
			addGauge(ms, "g", "", 1)
			gs := translateAll(t, md, c.urlLabels, func(s *Settings) { s.GroupBy = c.groupBy })
			if len(gs) != 1 {
				t.Fatalf("%d groups", len(gs))
			}
			if !equalMaps(gs[0].Labels, c.want) {
				t.Errorf("key %v, want %v", gs[0].Labels, c.want)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestAResourceWithoutJobHasItsPointsRefusedAlone(t *testing.T) {
	md := pmetric.NewMetrics()
	ms := addResource(md, "host.name", "h")
	addGauge(ms, "g", "", 1)
	addGauge(ms, "h", "", 1)
	ms = addResource(md, "service.name", "svc")
	addGauge(ms, "g", "", 1)
	gs := translateAll(t, md, nil, nil)
	if len(gs) != 2 {
		t.Fatalf("%d groups", len(gs))
	}
	if gs[0].Labels != nil || gs[0].Rejected != 2 || !strings.Contains(gs[0].Reason, "service.name") || len(gs[0].Families) != 0 {
		t.Errorf("refused group %+v", gs[0])
	}
	if gs[1].Labels["job"] != "svc" || gs[1].Rejected != 0 || len(gs[1].Families) != 1 {
		t.Errorf("kept group %+v", gs[1])
	}
}

func TestURLLabelsWithoutJobFailTheRequest(t *testing.T) {
	md, ms := request("service.name", "svc")
	addGauge(ms, "g", "", 1)
	if _, err := translateOnce(md, map[string]string{"instance": "a"}, Settings{}, testNow); err == nil {
		t.Fatal("no error")
	}
}

func TestResourcesOfOneKeyAreOneGroupAndTheLastPointOfASeriesWins(t *testing.T) {
	md := pmetric.NewMetrics()
	ms := addResource(md, "service.name", "svc", "service.instance.id", "run-1")
	addGauge(ms, "g", "", 1, "a", "x")
	addGauge(ms, "g", "", 2, "a", "y")
	ms = addResource(md, "service.name", "svc", "service.instance.id", "run-2")
	addGauge(ms, "g", "", 3, "a", "x")
	g := translateOne(t, md, nil)
	mf := family(t, g, "g")
	if len(mf.Metric) != 2 {
		t.Fatalf("%d series", len(mf.Metric))
	}
	got := map[string]float64{}
	for _, m := range mf.Metric {
		got[labelString(m)] = m.GetGauge().GetValue()
	}
	if got[`{a="x"}`] != 3 || got[`{a="y"}`] != 2 {
		t.Errorf("values %v", got)
	}
}

func TestSeriesLabels(t *testing.T) {
	cases := []struct {
		name     string
		resource []string
		attrs    []string
		mod      func(*Settings)
		want     string
	}{
		{"attribute names are sanitised", []string{"service.name", "svc"}, []string{"http.method", "GET", "1st", "a", "_x", "b"}, nil,
			`{http_method="GET",key_1st="a",key_x="b"}`},
		{"colliding names join their values in key order", []string{"service.name", "svc"}, []string{"a.b", "1", "a_b", "2", "a-b", "0"}, nil,
			`{a_b="0;1;2"}`},
		{"empty values are no label", []string{"service.name", "svc"}, []string{"a", "", "b", "1"}, nil,
			`{b="1"}`},
		{"job and instance from the resource are not on series", []string{"service.name", "svc", "service.instance.id", "u"}, []string{"job", "x", "instance", "y", "k", "v"}, nil,
			`{k="v"}`},
		{"promoted resource attributes are labels unless the point has them", []string{"service.name", "svc", "region", "eu", "zone", "z1"}, []string{"zone", "z2"},
			func(s *Settings) { s.PromoteResourceAttributes = []string{"region", "zone"} },
			`{region="eu",zone="z2"}`},
		{"promoting all but the ignored ones", []string{"service.name", "svc", "region", "eu", "host.name", "h"}, nil,
			func(s *Settings) {
				s.PromoteAllResourceAttributes, s.IgnoreResourceAttributes = true, []string{"host.name"}
			},
			`{region="eu",service_name="svc"}`},
		{"scope metadata promoted", []string{"service.name", "svc"}, []string{"otel_scope_name", "mine"},
			func(s *Settings) { s.PromoteScopeMetadata = true },
			`{otel_scope_name="test-scope",otel_scope_version="1.0"}`},
		{"UTF-8 strategies keep attribute names", []string{"service.name", "svc"}, []string{"http.method", "GET"},
			func(s *Settings) { s.TranslationStrategy, s.UTF8Names = "NoTranslation", true },
			`{http.method="GET"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			md, ms := request(c.resource...)
			md.ResourceMetrics().At(0).ScopeMetrics().At(0).Scope().SetVersion("1.0")
			addGauge(ms, "g", "", 1, c.attrs...)
			g := translateOne(t, md, c.mod)
			if g.Rejected != 0 {
				t.Fatalf("rejected: %s", g.Reason)
			}
			mf := family(t, g, "g")
			if got := labelString(mf.Metric[0]); got != c.want {
				t.Errorf("labels %s, want %s", got, c.want)
			}
		})
	}
}

func TestGroupByLabelsAreNotOnSeries(t *testing.T) {
	md, ms := request("service.name", "svc", "env", "prod")
	addGauge(ms, "g", "", 1, "env", "x", "k", "v")
	g := translateOne(t, md, func(s *Settings) { s.GroupBy = []string{"env"}; s.PromoteResourceAttributes = []string{"env"} })
	if got := labelString(family(t, g, "g").Metric[0]); got != `{k="v"}` {
		t.Errorf("labels %s", got)
	}
}

func TestNumberPoints(t *testing.T) {
	md, ms := request("service.name", "svc")
	c := addSum(ms, "requests", "", true, pmetric.AggregationTemporalityCumulative, 7)
	ex := c.Exemplars().AppendEmpty()
	ex.SetDoubleValue(1)
	ex.SetTimestamp(testTS)
	ex.SetTraceID(pcommon.TraceID{0xab, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	ex.SetSpanID(pcommon.SpanID{0xcd, 1, 2, 3, 4, 5, 6, 7})
	ex.FilteredAttributes().PutStr("user", "u1")
	older := c.Exemplars().AppendEmpty()
	older.SetDoubleValue(2)
	older.SetTimestamp(testStart)
	i := addGauge(ms, "ints", "", 0)
	i.SetIntValue(-4)
	g := translateOne(t, md, nil)

	ctr := family(t, g, "requests_total").Metric[0].GetCounter()
	if ctr.GetValue() != 7 {
		t.Errorf("counter %v", ctr.GetValue())
	}
	if got := ctr.GetCreatedTimestamp().AsTime(); !got.Equal(testStart.AsTime()) {
		t.Errorf("created %v", got)
	}
	e := ctr.GetExemplar()
	if e.GetValue() != 1 {
		t.Fatalf("exemplar %v, want the latest", e)
	}
	want := map[string]string{"trace_id": "ab0102030405060708090a0b0c0d0e0f", "span_id": "cd01020304050607", "user": "u1"}
	for _, lp := range e.Label {
		if want[lp.GetName()] != lp.GetValue() {
			t.Errorf("exemplar label %s=%s", lp.GetName(), lp.GetValue())
		}
	}
	if len(e.Label) != 3 || e.Label[0].GetName() != "span_id" {
		t.Errorf("exemplar labels %v", e.Label)
	}
	if got := family(t, g, "ints").Metric[0].GetGauge().GetValue(); got != -4 {
		t.Errorf("int gauge %v", got)
	}
}

func TestNoRecordedValue(t *testing.T) {
	t.Run("a point without value removes its series and keeps the family", func(t *testing.T) {
		md, ms := request("service.name", "svc")
		addGauge(ms, "g", "", 1)
		addGauge(ms, "g", "", 0).SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
		g := translateOne(t, md, nil)
		if mf := family(t, g, "g"); len(mf.Metric) != 0 {
			t.Errorf("%d series", len(mf.Metric))
		}
	})
	t.Run("a later point brings the series back", func(t *testing.T) {
		md, ms := request("service.name", "svc")
		addGauge(ms, "g", "", 0).SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
		addGauge(ms, "g", "", 5)
		g := translateOne(t, md, nil)
		if mf := family(t, g, "g"); len(mf.Metric) != 1 || mf.Metric[0].GetGauge().GetValue() != 5 {
			t.Errorf("family %v", mf)
		}
	})
}

func TestDeltas(t *testing.T) {
	t.Run("accumulated deltas carry their increase and window", func(t *testing.T) {
		md, ms := request("service.name", "svc")
		addSum(ms, "jobs", "", true, pmetric.AggregationTemporalityDelta, 4)
		addSum(ms, "level", "", false, pmetric.AggregationTemporalityDelta, -2)
		g := translateOne(t, md, nil)
		if len(g.Families) != 0 || len(g.Deltas) != 2 {
			t.Fatalf("families %s", familyNames(g))
		}
		d := g.Deltas[0]
		if d.Family.GetName() != "jobs_total" || d.Family.Metric[0].GetCounter().GetValue() != 4 || d.Family.Metric[0].GetCounter().CreatedTimestamp != nil {
			t.Errorf("delta counter %v", d.Family)
		}
		if len(d.Windows) != 1 || !d.Windows[0].Start.Equal(testStart.AsTime()) || !d.Windows[0].End.Equal(testTS.AsTime()) {
			t.Errorf("windows %v", d.Windows)
		}
		if d := g.Deltas[1]; d.Family.GetName() != "level" || d.Family.Metric[0].GetGauge().GetValue() != -2 {
			t.Errorf("delta non-monotonic sum %v", d.Family)
		}
	})
	t.Run("reject refuses deltas as Prometheus does", func(t *testing.T) {
		md, ms := request("service.name", "svc")
		addSum(ms, "jobs", "", true, pmetric.AggregationTemporalityDelta, 4)
		addGauge(ms, "g", "", 1)
		g := translateOne(t, md, func(s *Settings) { s.Delta = Reject })
		if g.Rejected != 1 || g.Reason != `invalid temporality and type combination for metric "jobs"` || len(g.Deltas) != 0 {
			t.Errorf("group %+v", g)
		}
	})
}

func TestRefusedPoints(t *testing.T) {
	cases := []struct {
		name   string
		build  func(ms pmetric.MetricSlice)
		reason string
	}{
		{"unspecified temporality", func(ms pmetric.MetricSlice) {
			addSum(ms, "s", "", true, pmetric.AggregationTemporalityUnspecified, 1)
		}, "invalid temporality"},
		{"unknown temporality", func(ms pmetric.MetricSlice) {
			addSum(ms, "s", "", true, pmetric.AggregationTemporality(7), 1)
		}, "invalid temporality"},
		{"a timestamp more than 10 minutes ahead", func(ms pmetric.MetricSlice) {
			addGauge(ms, "g", "", 1).SetTimestamp(pcommon.NewTimestampFromTime(testNow.Add(11 * time.Minute)))
		}, "ahead of the gateway's clock"},
		{"a name that normalises to nothing", func(ms pmetric.MetricSlice) {
			addGauge(ms, "...", "", 1)
		}, `metric "..."`},
		{"an exemplar without value", func(ms pmetric.MetricSlice) {
			addSum(ms, "s", "", true, pmetric.AggregationTemporalityCumulative, 1).Exemplars().AppendEmpty()
		}, "exemplar has no value"},
		{"an attribute that cannot be a label name", func(ms pmetric.MetricSlice) {
			addGauge(ms, "g", "", 1, "...", "x")
		}, `attribute "..."`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			md, ms := request("service.name", "svc")
			c.build(ms)
			addGauge(ms, "kept", "", 1)
			g := translateOne(t, md, nil)
			if g.Rejected != 1 || !strings.Contains(g.Reason, c.reason) {
				t.Errorf("rejected %d, reason %q; want 1 with %q", g.Rejected, g.Reason, c.reason)
			}
			if strings.Contains(g.Reason, "\n") {
				t.Errorf("reason of more than one line: %q", g.Reason)
			}
			family(t, g, "kept")
			for _, mf := range g.Families {
				if mf.GetName() != "kept" && mf.GetName() != targetInfoName {
					t.Errorf("family %s stored", mf.GetName())
				}
			}
		})
	}
}

func TestNonMonotonicDeltaSumsAddUpAsGauges(t *testing.T) {
	var deltas []DeltaFamily
	for i, v := range []float64{3, -1} {
		md, ms := request("service.name", "svc")
		dp := addSum(ms, "level", "", false, pmetric.AggregationTemporalityDelta, v)
		dp.SetStartTimestamp(pcommon.Timestamp(1e9 * (i + 1)))
		dp.SetTimestamp(pcommon.Timestamp(1e9 * (i + 2)))
		deltas = append(deltas, translateOne(t, md, nil).Deltas...)
	}
	acc, err := AddDeltas(nil, deltas[:1])
	if err != nil {
		t.Fatal(err)
	}
	acc, err = AddDeltas(acc.States, deltas[1:])
	if err != nil {
		t.Fatal(err)
	}
	mf := acc.Families[0]
	if mf.GetType().String() != "GAUGE" || mf.Metric[0].GetGauge().GetValue() != 2 || acc.Resets != 0 {
		t.Errorf("family %v, resets %d", mf, acc.Resets)
	}
}

func TestAnEmptyResourceWithoutJobIsNoGroup(t *testing.T) {
	md := pmetric.NewMetrics()
	md.ResourceMetrics().AppendEmpty()
	if gs := translateAll(t, md, nil, nil); len(gs) != 0 {
		t.Errorf("groups %+v", gs)
	}
}
