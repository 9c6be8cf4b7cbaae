package otlp

import (
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

func TestNamesTheStoreWouldRefuseAreRefusedPointByPoint(t *testing.T) {
	utf8 := func(s *Settings) { s.TranslationStrategy, s.UTF8Names = "NoTranslation", true }
	cases := []struct {
		name   string
		mod    func(*Settings)
		build  func(ms pmetric.MetricSlice)
		reason string
	}{
		{"label names written alike under an escaping", utf8, func(ms pmetric.MetricSlice) {
			addGauge(ms, "g", "", 1, "a.b", "1")
			addGauge(ms, "h", "", 1, "a_b", "2")
		}, `label name "a_b" is written like label name "a.b" under escaping=underscores`},
		{"a label name that underscores make reserved", utf8, func(ms pmetric.MetricSlice) {
			addGauge(ms, "g", "", 1)
			addGauge(ms, "h", "", 1, "._x", "2")
		}, `reserves`},
		{"a family name of two types", nil, func(ms pmetric.MetricSlice) {
			addGauge(ms, "x_total", "", 1)
			addSum(ms, "x", "", true, pmetric.AggregationTemporalityCumulative, 1)
		}, `its family "x_total" is already a gauge`},
		{"a family exposing another's samples", nil, func(ms pmetric.MetricSlice) {
			addHistogram(ms, "lat", "", pmetric.AggregationTemporalityCumulative, []float64{1}, []uint64{1, 1}, 1)
			addGauge(ms, "lat_count", "", 1)
		}, `clashes with the family "lat"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			md, ms := request("service.name", "svc")
			c.build(ms)
			g := translateOne(t, md, c.mod)
			if g.Rejected != 1 || !strings.Contains(g.Reason, c.reason) {
				t.Errorf("rejected %d, reason %q; want 1 with %q", g.Rejected, g.Reason, c.reason)
			}
			if len(g.Families) != 1 {
				t.Errorf("families %s, want the first one kept", familyNames(g))
			}
		})
	}
}

func TestAnExemplarKeepsOneOfTwoNamesWrittenAlike(t *testing.T) {
	md, ms := request("service.name", "svc")
	dp := addSum(ms, "s", "", true, pmetric.AggregationTemporalityCumulative, 1)
	e := dp.Exemplars().AppendEmpty()
	e.SetDoubleValue(1)
	putAttrs(e.FilteredAttributes(), "a.b", "1", "a_b", "2")
	g := translateOne(t, md, func(s *Settings) { s.UTF8Names = true })
	if ls := family(t, g, "s_total").Metric[0].GetCounter().GetExemplar().GetLabel(); len(ls) != 1 {
		t.Errorf("exemplar labels %v", ls)
	}
}

func TestATargetInfoRefusedForTwoAttributeNamesWrittenAlikeIsCountedAsOnePoint(t *testing.T) {
	for _, strategy := range []string{"NoUTF8EscapingWithSuffixes", "NoTranslation"} {
		t.Run(strategy, func(t *testing.T) {
			md, ms := request("service.name", "svc", "host.name", "a", "host_name", "b")
			addGauge(ms, "g", "", 1)
			g := translateOne(t, md, func(s *Settings) { s.TranslationStrategy, s.UTF8Names = strategy, true })
			if g.Rejected != 1 {
				t.Errorf("rejected %d, want 1 (target_info)", g.Rejected)
			}
			for _, want := range []string{"target_info", `"host.name"`, `"host_name"`} {
				if !strings.Contains(g.Reason, want) {
					t.Errorf("reason %q does not name %s", g.Reason, want)
				}
			}
			if names := familyNames(g); names != "g" {
				t.Errorf("families %s, want g alone", names)
			}
		})
	}
}

func TestATargetInfoRefusedAfterAPointIsCountedThoughTheFirstReasonIsThePoints(t *testing.T) {
	// Promoted, host.name and host_name refuse the point first; target_info
	// is refused for the same names and must not vanish behind its reason.
	md, ms := request("service.name", "svc", "host.name", "a", "host_name", "b")
	addGauge(ms, "g", "", 1)
	g := translateOne(t, md, func(s *Settings) {
		s.TranslationStrategy, s.UTF8Names, s.PromoteAllResourceAttributes = "NoTranslation", true, true
	})
	if g.Rejected != 2 || !strings.HasPrefix(g.Reason, `metric "g"`) {
		t.Errorf("rejected %d, reason %q; want 2, the point's reason first", g.Rejected, g.Reason)
	}
	if len(g.Families) != 0 {
		t.Errorf("families %s, want none", familyNames(g))
	}
}
