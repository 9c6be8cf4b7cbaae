package web

import (
	"hash/fnv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/otlp"
)

// fakeTranslate stands in for otlp.Translate in the handler's tests, which
// test the handler, not the translation: each resource is a group keyed by
// the URL's labels or job=service.name; each gauge or sum point becomes a
// series named after the metric with dots as underscores (a monotonic
// cumulative sum a counter, a delta sum a delta counter), labelled by its
// attributes. A family's time is its newest point's, a delta point's
// source the FNV-1a hash of its resource's service.instance.id.
func fakeTranslate(md pmetric.Metrics, urlLabels map[string]string, _ time.Time) ([]otlp.Group, error) {
	return fakeTranslateWith(otlp.Settings{}, md, urlLabels)
}

// fakeTranslateWith is fakeTranslate under settings s (its delta mode).
func fakeTranslateWith(s otlp.Settings, md pmetric.Metrics, urlLabels map[string]string) ([]otlp.Group, error) {
	var groups []otlp.Group
	for i := 0; i < md.ResourceMetrics().Len(); i++ {
		rm := md.ResourceMetrics().At(i)
		g := otlp.Group{Labels: urlLabels}
		if g.Labels == nil {
			job, _ := rm.Resource().Attributes().Get("service.name")
			g.Labels = map[string]string{"job": job.AsString()}
		}
		fams := map[string]int{}
		deltas := map[string]*otlp.DeltaFamily{}
		var source uint64
		if id, ok := rm.Resource().Attributes().Get("service.instance.id"); ok {
			h := fnv.New64a()
			h.Write([]byte(id.AsString()))
			source = h.Sum64()
		}
		for j := 0; j < rm.ScopeMetrics().Len(); j++ {
			ms := rm.ScopeMetrics().At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				name := strings.ReplaceAll(m.Name(), ".", "_")
				var pts pmetric.NumberDataPointSlice
				typ := dto.MetricType_GAUGE
				delta := false
				switch m.Type() {
				case pmetric.MetricTypeGauge:
					pts = m.Gauge().DataPoints()
				case pmetric.MetricTypeSum:
					pts = m.Sum().DataPoints()
					if m.Sum().IsMonotonic() {
						typ = dto.MetricType_COUNTER
						name += "_total"
					}
					delta = m.Sum().AggregationTemporality() == pmetric.AggregationTemporalityDelta
				default:
					g.Rejected++
					g.Reason = "fake translation takes gauges and sums only"
					continue
				}
				for p := 0; p < pts.Len(); p++ {
					pt := pts.At(p)
					dm := &dto.Metric{}
					pt.Attributes().Range(func(k string, v pcommon.Value) bool {
						dm.Label = append(dm.Label, &dto.LabelPair{Name: proto.String(k), Value: proto.String(v.AsString())})
						return true
					})
					v := pt.DoubleValue()
					if pt.ValueType() == pmetric.NumberDataPointValueTypeInt {
						v = float64(pt.IntValue())
					}
					if typ == dto.MetricType_COUNTER {
						dm.Counter = &dto.Counter{Value: proto.Float64(v)}
					} else {
						dm.Gauge = &dto.Gauge{Value: proto.Float64(v)}
					}
					if delta {
						if s.Delta == otlp.Reject {
							g.Rejected++
							g.Reason = "delta refused"
							continue
						}
						d := deltas[name]
						if d == nil {
							d = &otlp.DeltaFamily{Family: &dto.MetricFamily{Name: proto.String(name), Type: typ.Enum()}}
							deltas[name] = d
						}
						d.Family.Metric = append(d.Family.Metric, dm)
						d.Windows = append(d.Windows, otlp.Window{Start: pt.StartTimestamp().AsTime(), End: pt.Timestamp().AsTime(), Source: source})
						continue
					}
					fi, ok := fams[name]
					if !ok {
						fi = len(g.Families)
						fams[name] = fi
						g.Families = append(g.Families, &dto.MetricFamily{Name: proto.String(name), Type: typ.Enum()})
						g.Times = append(g.Times, time.Time{})
					}
					g.Families[fi].Metric = append(g.Families[fi].Metric, dm)
					if ts := pt.Timestamp(); ts != 0 && ts.AsTime().After(g.Times[fi]) {
						g.Times[fi] = ts.AsTime()
					}
				}
			}
		}
		for _, d := range deltas {
			g.Deltas = append(g.Deltas, *d)
		}
		groups = append(groups, g)
	}
	return groups, nil
}

// otlpMetricsRequest builds a request: one resource per job, each with a
// gauge "temp.celsius" of value v and a cumulative counter "runs" of v.
func otlpMetricsRequest(v float64, jobs ...string) pmetric.Metrics {
	md := pmetric.NewMetrics()
	for _, job := range jobs {
		rm := md.ResourceMetrics().AppendEmpty()
		rm.Resource().Attributes().PutStr("service.name", job)
		ms := rm.ScopeMetrics().AppendEmpty().Metrics()
		g := ms.AppendEmpty()
		g.SetName("temp.celsius")
		gp := g.SetEmptyGauge().DataPoints().AppendEmpty()
		gp.SetDoubleValue(v)
		gp.Attributes().PutStr("room", "a")
		c := ms.AppendEmpty()
		c.SetName("runs")
		sum := c.SetEmptySum()
		sum.SetIsMonotonic(true)
		sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		sum.DataPoints().AppendEmpty().SetDoubleValue(v)
	}
	return md
}

// otlpDeltaRequest builds a request for job with one delta counter point
// "jobs.done" of value v over (start, end] seconds.
func otlpDeltaRequest(job string, v float64, start, end int64) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", job)
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("jobs.done")
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	p := sum.DataPoints().AppendEmpty()
	p.SetDoubleValue(v)
	p.SetStartTimestamp(pcommon.Timestamp(start * 1e9))
	p.SetTimestamp(pcommon.Timestamp(end * 1e9))
	return md
}
