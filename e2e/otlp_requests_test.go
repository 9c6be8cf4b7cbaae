package e2e

import (
	"math"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// otlpTS converts a time to an OTLP timestamp.
func otlpTS(t time.Time) pcommon.Timestamp { return pcommon.NewTimestampFromTime(t) }

// otlpResource appends a ResourceMetrics with the given attributes (name,
// value pairs) and one scope to md, and returns the scope's metrics.
func otlpResource(md pmetric.Metrics, attrs ...string) pmetric.MetricSlice {
	rm := md.ResourceMetrics().AppendEmpty()
	putAttrs(rm.Resource().Attributes(), attrs...)
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("e2e.otlp.scope")
	sm.Scope().SetVersion("1.2.3")
	sm.Scope().Attributes().PutStr("scope.team", "batch")
	sm.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
	return sm.Metrics()
}

// putAttrs sets name, value pairs on m.
func putAttrs(m pcommon.Map, attrs ...string) {
	for i := 0; i+1 < len(attrs); i += 2 {
		m.PutStr(attrs[i], attrs[i+1])
	}
}

// otlpMetric appends a metric with a name, unit and description.
func otlpMetric(ms pmetric.MetricSlice, name, unit string) pmetric.Metric {
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	m.SetDescription("The " + name + " metric of the OTLP oracle test.")
	return m
}

// otlpGauge appends a gauge point with value v at end to m (which it makes
// a gauge on first use).
func otlpGauge(m pmetric.Metric, end time.Time, v float64, attrs ...string) pmetric.NumberDataPoint {
	if m.Type() != pmetric.MetricTypeGauge {
		m.SetEmptyGauge()
	}
	dp := m.Gauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(otlpTS(end))
	dp.SetDoubleValue(v)
	putAttrs(dp.Attributes(), attrs...)
	return dp
}

// otlpSum appends a sum point over (start, end] to m (which it makes a sum
// of the given monotonicity and temporality on first use).
func otlpSum(m pmetric.Metric, monotonic bool, temp pmetric.AggregationTemporality, start, end time.Time, v float64, attrs ...string) pmetric.NumberDataPoint {
	if m.Type() != pmetric.MetricTypeSum {
		s := m.SetEmptySum()
		s.SetIsMonotonic(monotonic)
		s.SetAggregationTemporality(temp)
	}
	dp := m.Sum().DataPoints().AppendEmpty()
	dp.SetStartTimestamp(otlpTS(start))
	dp.SetTimestamp(otlpTS(end))
	dp.SetDoubleValue(v)
	putAttrs(dp.Attributes(), attrs...)
	return dp
}

// otlpHistogram appends an explicit-bounds histogram point to m; counts
// has one more element than bounds, and count is their total.
func otlpHistogram(m pmetric.Metric, temp pmetric.AggregationTemporality, start, end time.Time, bounds []float64, counts []uint64, sum float64, attrs ...string) pmetric.HistogramDataPoint {
	if m.Type() != pmetric.MetricTypeHistogram {
		m.SetEmptyHistogram().SetAggregationTemporality(temp)
	}
	dp := m.Histogram().DataPoints().AppendEmpty()
	dp.SetStartTimestamp(otlpTS(start))
	dp.SetTimestamp(otlpTS(end))
	dp.ExplicitBounds().FromRaw(bounds)
	dp.BucketCounts().FromRaw(counts)
	var n uint64
	for _, c := range counts {
		n += c
	}
	dp.SetCount(n)
	dp.SetSum(sum)
	putAttrs(dp.Attributes(), attrs...)
	return dp
}

// expBuckets are one side of an exponential histogram point.
type expBuckets struct {
	offset int32
	counts []uint64
}

// otlpExpHistogram appends an exponential histogram point to m; its count
// is the total of the zero, positive and negative buckets.
func otlpExpHistogram(m pmetric.Metric, temp pmetric.AggregationTemporality, start, end time.Time, scale int32, zero uint64, pos, neg expBuckets, sum float64, attrs ...string) pmetric.ExponentialHistogramDataPoint {
	if m.Type() != pmetric.MetricTypeExponentialHistogram {
		m.SetEmptyExponentialHistogram().SetAggregationTemporality(temp)
	}
	dp := m.ExponentialHistogram().DataPoints().AppendEmpty()
	dp.SetStartTimestamp(otlpTS(start))
	dp.SetTimestamp(otlpTS(end))
	dp.SetScale(scale)
	dp.SetZeroCount(zero)
	dp.Positive().SetOffset(pos.offset)
	dp.Positive().BucketCounts().FromRaw(pos.counts)
	dp.Negative().SetOffset(neg.offset)
	dp.Negative().BucketCounts().FromRaw(neg.counts)
	n := zero
	for _, c := range append(append([]uint64{}, pos.counts...), neg.counts...) {
		n += c
	}
	dp.SetCount(n)
	dp.SetSum(sum)
	putAttrs(dp.Attributes(), attrs...)
	return dp
}

// otlpSummary appends a summary point with quantile, value pairs to m.
func otlpSummary(m pmetric.Metric, start, end time.Time, count uint64, sum float64, quantiles ...float64) pmetric.SummaryDataPoint {
	if m.Type() != pmetric.MetricTypeSummary {
		m.SetEmptySummary()
	}
	dp := m.Summary().DataPoints().AppendEmpty()
	dp.SetStartTimestamp(otlpTS(start))
	dp.SetTimestamp(otlpTS(end))
	dp.SetCount(count)
	dp.SetSum(sum)
	for i := 0; i+1 < len(quantiles); i += 2 {
		q := dp.QuantileValues().AppendEmpty()
		q.SetQuantile(quantiles[i])
		q.SetValue(quantiles[i+1])
	}
	return dp
}

// noRecordedValue is the flags of a point that says its series ended.
var noRecordedValue = pmetric.DefaultDataPointFlags.WithNoRecordedValue(true)

// oracleRequests are the requests every case of
// TestOTLPStoresWhatPrometheus3Stores sends, in order, to Prometheus' own
// receiver and to the gateway. Each covers every kind of point, names with
// dots and units, attributes that collide once sanitised, resource and
// scope attributes to promote, and delta points in consecutive windows; the
// second request ends one series with NoRecordedValue and sends the next
// delta window. start is the process start of every cumulative point; the
// points' times are before now, so that both servers hold them when asked.
//
// With utf8Names the colliding attributes are left out: names kept as sent
// must still be distinct under every escaping the gateway serves (DESIGN
// §5), so the gateway refuses http.method beside http_method, which
// Prometheus stores as two labels — a deliberate difference.
func oracleRequests(start time.Time, utf8Names bool) []pmetric.Metrics {
	t1, t2 := start.Add(time.Second), start.Add(2*time.Second)
	return []pmetric.Metrics{oracleRequest(start, start, t1, 1, utf8Names), oracleRequest(start, t1, t2, 2, utf8Names)}
}

// oracleRequest is request n (1 or 2) of oracleRequests: cumulative points
// over (start, end], delta points over (deltaStart, end].
func oracleRequest(start, deltaStart, end time.Time, n int, utf8Names bool) pmetric.Metrics {
	md := pmetric.NewMetrics()
	cum, delta := pmetric.AggregationTemporalityCumulative, pmetric.AggregationTemporalityDelta
	f := float64(n)

	ms := otlpResource(md,
		"service.name", "e2e_otlp_kinds",
		"service.namespace", "e2e",
		"service.instance.id", "8e7a3c2e-0b1f-4d7e-9a55-2f0c1d9b6a10",
		"host.name", "builder-7",
		"deployment.environment", "ci",
		"k8s.pod.name", "batch-1",
	)
	// Gauges: a unit that becomes a suffix, unit 1 (_ratio), and
	// http.method/http_method, which both sanitise to http_method (the
	// values are joined with ";" in the attributes' sorted order).
	otlpGauge(otlpMetric(ms, "e2e.otlp.temperature", "Cel"), end, 21.5*f, "room.name", "lab")
	otlpGauge(otlpMetric(ms, "e2e.otlp.utilization", "1"), end, 0.25*f)
	// Values that are not numbers: NaN and both infinities.
	odd := otlpMetric(ms, "e2e.otlp.odd", "")
	otlpGauge(odd, end, math.NaN(), "v", "nan")
	otlpGauge(odd, end, math.Inf(1), "v", "inf")
	otlpGauge(odd, end, math.Inf(-1), "v", "-inf")
	if utf8Names {
		otlpGauge(otlpMetric(ms, "e2e.otlp.collide", ""), end, f, "http.method", "GET", "http.route", "/x")
	} else {
		otlpGauge(otlpMetric(ms, "e2e.otlp.collide", ""), end, f, "http.method", "GET", "http_method", "POST")
	}
	workers := otlpMetric(ms, "e2e.otlp.workers", "{worker}")
	otlpGauge(workers, end, 3*f, "pool", "a")
	if p := otlpGauge(workers, end, 4, "pool", "b"); n == 2 {
		p.SetFlags(noRecordedValue)
	}
	// Cumulative sums: monotonic (counters, _total, with a byte unit) and
	// not (a gauge).
	otlpSum(otlpMetric(ms, "e2e.otlp.requests", ""), true, cum, start, end, 10*f, "code", "200")
	otlpSum(otlpMetric(ms, "e2e.otlp.sent", "By"), true, cum, start, end, 1024*f)
	otlpSum(otlpMetric(ms, "e2e.otlp.queue.length", ""), false, cum, start, end, 7-f)
	// An explicit histogram in seconds, an exponential one at scale 2 with
	// negative, zero and positive buckets, one at scale 10 (above
	// Prometheus' 8, so buckets merge), and a summary in bytes.
	otlpHistogram(otlpMetric(ms, "e2e.otlp.duration", "s"), cum, start, end, []float64{0.1, 1, 10}, []uint64{1, 2 * uint64(n), 3, 1}, 17.5*f)
	// The point's own zero threshold is ignored by Prometheus 3.16, which
	// uses its default (2^-128 rounded, 1e-128) for every OTLP point.
	otlpExpHistogram(otlpMetric(ms, "e2e.otlp.latency", "ms"), cum, start, end, 2, 1,
		expBuckets{offset: -1, counts: []uint64{1, 0, 2 * uint64(n)}}, expBuckets{counts: []uint64{1}}, 3.5*f).SetZeroThreshold(0.001)
	otlpExpHistogram(otlpMetric(ms, "e2e.otlp.fine", "s"), cum, start, end, 10, 0,
		expBuckets{offset: 1021, counts: []uint64{1, 1, 1, 1, 2, uint64(n)}}, expBuckets{}, 11*f)
	otlpSummary(otlpMetric(ms, "e2e.otlp.size", "By"), start, end, 8*uint64(n), 1000*f, 0.5, 100*f, 0.99, 250*f)
	// Deltas: a counter, an up-down counter (a gauge once summed), an
	// explicit and an exponential histogram, each point covering
	// (deltaStart, end].
	otlpSum(otlpMetric(ms, "e2e.otlp.jobs.done", ""), true, delta, deltaStart, end, 5*f, "queue", "q1")
	otlpSum(otlpMetric(ms, "e2e.otlp.inflight.change", "{job}"), false, delta, deltaStart, end, 4-3*f)
	otlpHistogram(otlpMetric(ms, "e2e.otlp.step.duration", "s"), delta, deltaStart, end, []float64{1, 5}, []uint64{uint64(n), 1, 0}, 4*f)
	otlpExpHistogram(otlpMetric(ms, "e2e.otlp.step.size", "By"), delta, deltaStart, end, 1, 0,
		expBuckets{offset: 2, counts: []uint64{1, uint64(n)}}, expBuckets{}, 9*f)

	// A second resource with identifying attributes only: no target_info.
	ms2 := otlpResource(md, "service.name", "e2e_otlp_plain")
	otlpGauge(otlpMetric(ms2, "e2e.otlp.plain", "s"), end, 2*f)
	return md
}
