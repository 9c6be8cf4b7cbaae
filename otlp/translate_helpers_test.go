package otlp

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// testNow is the clock every test translates at.
var testNow = time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)

// testTS is a point timestamp a minute before testNow, and testStart one
// an hour before.
var (
	testTS    = pcommon.NewTimestampFromTime(testNow.Add(-time.Minute))
	testStart = pcommon.NewTimestampFromTime(testNow.Add(-time.Hour))
)

// request builds a request with one resource of the given attributes and
// one scope, and returns the scope's metric slice to fill.
func request(resAttrs ...string) (pmetric.Metrics, pmetric.MetricSlice) {
	md := pmetric.NewMetrics()
	ms := addResource(md, resAttrs...)
	return md, ms
}

// addResource adds a resource with attributes given as key, value pairs,
// and one scope; it returns the scope's metrics.
func addResource(md pmetric.Metrics, resAttrs ...string) pmetric.MetricSlice {
	rm := md.ResourceMetrics().AppendEmpty()
	for i := 0; i+1 < len(resAttrs); i += 2 {
		rm.Resource().Attributes().PutStr(resAttrs[i], resAttrs[i+1])
	}
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("test-scope")
	return sm.Metrics()
}

// putAttrs sets attributes given as key, value pairs.
func putAttrs(m pcommon.Map, kv ...string) {
	for i := 0; i+1 < len(kv); i += 2 {
		m.PutStr(kv[i], kv[i+1])
	}
}

// addGauge adds a gauge metric with one double point.
func addGauge(ms pmetric.MetricSlice, name, unit string, v float64, attrs ...string) pmetric.NumberDataPoint {
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(testTS)
	dp.SetDoubleValue(v)
	putAttrs(dp.Attributes(), attrs...)
	return dp
}

// addSum adds a sum metric with one double point.
func addSum(ms pmetric.MetricSlice, name, unit string, monotonic bool, temp pmetric.AggregationTemporality, v float64, attrs ...string) pmetric.NumberDataPoint {
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	s := m.SetEmptySum()
	s.SetIsMonotonic(monotonic)
	s.SetAggregationTemporality(temp)
	dp := s.DataPoints().AppendEmpty()
	dp.SetStartTimestamp(testStart)
	dp.SetTimestamp(testTS)
	dp.SetDoubleValue(v)
	putAttrs(dp.Attributes(), attrs...)
	return dp
}

// translateOne translates md with default settings (modified by mod) and
// requires exactly one group.
func translateOne(t *testing.T, md pmetric.Metrics, mod func(*Settings)) Group {
	t.Helper()
	gs := translateAll(t, md, nil, mod)
	if len(gs) != 1 {
		t.Fatalf("got %d groups, want 1: %+v", len(gs), gs)
	}
	return gs[0]
}

// translateAll translates md with default settings modified by mod.
func translateAll(t *testing.T, md pmetric.Metrics, urlLabels map[string]string, mod func(*Settings)) []Group {
	t.Helper()
	var s Settings
	if mod != nil {
		mod(&s)
	}
	gs, err := translateOnce(md, urlLabels, s, testNow)
	if err != nil {
		t.Fatalf("Translate: %v", err)
	}
	return gs
}

// family returns the family named name, failing the test without it.
func family(t *testing.T, g Group, name string) *dto.MetricFamily {
	t.Helper()
	for _, mf := range g.Families {
		if mf.GetName() == name {
			return mf
		}
	}
	t.Fatalf("no family %q among %s", name, familyNames(g))
	return nil
}

// familyNames lists a group's family names.
func familyNames(g Group) string {
	var names []string
	for _, mf := range g.Families {
		names = append(names, mf.GetName())
	}
	for _, d := range g.Deltas {
		names = append(names, "delta:"+d.Family.GetName())
	}
	return strings.Join(names, ",")
}

// labelString renders a metric's labels as {a="1",b="2"}.
func labelString(m *dto.Metric) string {
	var parts []string
	for _, lp := range m.Label {
		parts = append(parts, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// translateOnce is NewTranslator(s) followed by its Translate, for tests
// that translate once.
func translateOnce(md pmetric.Metrics, urlLabels map[string]string, s Settings, now time.Time) ([]Group, error) {
	t, err := NewTranslator(s)
	if err != nil {
		return nil, err
	}
	return t.Translate(md, urlLabels, now)
}
