package oracle

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// otlpKind is the kind of an OTLP metric the generator makes, with its
// temporality.
type otlpKind int

const (
	otlpGauge otlpKind = iota
	otlpCounter
	otlpUpDown
	otlpHistogram
	otlpExpHistogram
	otlpSummary
	otlpDeltaCounter
	otlpDeltaUpDown
	otlpDeltaHistogram
	otlpDeltaExpHistogram
	otlpNumKinds
)

// delta reports whether the kind's points are deltas.
func (k otlpKind) delta() bool { return k >= otlpDeltaCounter }

// otlpMetricDef is one metric of a seed's catalog: its name, unit and kind
// stay the same through the seed, so that no request changes a family's
// type (the gateway refuses that, Prometheus would not care) and delta
// histograms keep their bounds and scale (bucket by bucket addition).
type otlpMetricDef struct {
	name, unit string
	kind       otlpKind
	bounds     []float64
	scale      int32
}

// otlpStems are metric names, dotted as OTel names are, with a few that
// sanitising changes more (a dash, a leading digit, upper case). No two of
// them, with any unit and suffix, translate to the same name.
var otlpStems = []string{
	"http.server.request.duration", "db.client.connections.usage", "process.cpu.time",
	"queue.depth", "batch.rows", "job.runtime", "cache.hits", "payload.size",
	"worker.utilization", "gc.pause", "net.io", "disk.ops", "rpc.latency",
	"items.processed", "e2e.Temp-Reading", "2xx.responses", "retry.attempts",
}

// otlpUnits are OTel units: ones the translator maps to a suffix (s, ms,
// By, KiBy, 1 → ratio for gauges, By/s → per second), annotations in
// braces (dropped), and ones it keeps or drops.
var otlpUnits = []string{"", "", "s", "ms", "By", "KiBy", "1", "{request}", "By/s", "%", "Cel"}

// otlpJobDef is a resource the generator sends again and again: its
// attributes, a job from service.namespace/service.name and target_info
// from the rest (or none when only identifying attributes are set).
type otlpJobDef struct {
	attrs [][2]string
}

// otlpJobs are the seed-independent resources: one whose non-identifying
// attributes collide once sanitised (host.name, host_name), one plain, and
// one with identifying attributes only.
var otlpJobs = []otlpJobDef{
	{attrs: [][2]string{{"service.name", "svc.alpha"}, {"service.namespace", "team-a"}, {"host.name", "h1"}, {"host_name", "h2"}, {"deployment.environment", "ci"}}},
	{attrs: [][2]string{{"service.name", "beta"}, {"k8s.pod.name", "beta-7f9c"}, {"cloud.region", ""}}},
	{attrs: [][2]string{{"service.name", "gamma"}}},
}

// otlpGen makes a seed's random OTLP requests.
type otlpGen struct {
	rng *rand.Rand
	// utf8 leaves out names that differ only where escaping with
	// underscores makes them alike (http.method and http_method): kept as
	// sent, they are two labels for Prometheus, and one series identity
	// under escaping for the gateway, which refuses them (DESIGN §5).
	utf8    bool
	catalog []otlpMetricDef
	// clock is the end of the last request's points; each request moves
	// it by a second, so that delta windows never overlap.
	clock, start time.Time
	// instances are the service.instance.id of each job's current
	// process.
	instances []string
}

// newOTLPGen returns the generator of seed; base is the process start of
// the first points.
func newOTLPGen(seed uint64, base time.Time, utf8 bool) *otlpGen {
	g := &otlpGen{rng: rand.New(rand.NewPCG(seed, 0x07e1)), clock: base, start: base, utf8: utf8}
	for _, i := range g.rng.Perm(len(otlpStems))[:8+g.rng.IntN(5)] {
		d := otlpMetricDef{name: otlpStems[i], unit: otlpUnits[g.rng.IntN(len(otlpUnits))], kind: otlpKind(g.rng.IntN(int(otlpNumKinds)))}
		switch d.kind {
		case otlpHistogram, otlpDeltaHistogram:
			d.bounds = g.bounds()
		case otlpDeltaExpHistogram:
			d.scale = int32(g.rng.IntN(17)) - 4
		}
		g.catalog = append(g.catalog, d)
	}
	for range otlpJobs {
		g.instances = append(g.instances, g.instanceID())
	}
	return g
}

// bounds returns increasing explicit bounds, sometimes none at all.
func (g *otlpGen) bounds() []float64 {
	n := g.rng.IntN(5)
	b := make([]float64, 0, n)
	v := -1 + g.rng.Float64()
	for range n {
		v += 0.25 + g.rng.Float64()*3
		b = append(b, math.Round(v*1000)/1000)
	}
	return b
}

// instanceID returns a random service.instance.id, as an SDK makes one per
// process.
func (g *otlpGen) instanceID() string {
	return fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", g.rng.Uint32(), g.rng.IntN(1<<16), g.rng.IntN(1<<12), g.rng.IntN(1<<12), g.rng.Uint64()&(1<<48-1))
}

// request returns the next request: one to three resources of distinct
// jobs (sometimes one without any attribute), each with one or two scopes
// (sometimes one without metrics) holding distinct catalog metrics, and
// it counts the data points it holds.
func (g *otlpGen) request() (pmetric.Metrics, int) {
	prev := g.clock
	g.clock = g.clock.Add(time.Second)
	md := pmetric.NewMetrics()
	points := 0
	jobs := g.rng.Perm(len(otlpJobs))[:1+g.rng.IntN(len(otlpJobs))]
	for _, j := range jobs {
		rm := md.ResourceMetrics().AppendEmpty()
		for _, a := range otlpJobs[j].attrs {
			if g.utf8 && a[0] == "host_name" {
				continue
			}
			rm.Resource().Attributes().PutStr(a[0], a[1])
		}
		// A new process of the job now and then: the gateway must not
		// gain a group for it.
		if g.rng.IntN(4) == 0 {
			g.instances[j] = g.instanceID()
		}
		rm.Resource().Attributes().PutStr("service.instance.id", g.instances[j])
		points += g.scopes(rm, prev)
	}
	if g.rng.IntN(12) == 0 {
		// An empty resource: no job, no instance, no target_info.
		points += g.scopes(md.ResourceMetrics().AppendEmpty(), prev)
	}
	return md, points
}

// scopes fills rm with one or two scopes holding a random subset of the
// catalog, and returns the number of points.
func (g *otlpGen) scopes(rm pmetric.ResourceMetrics, prev time.Time) int {
	metrics := g.rng.Perm(len(g.catalog))[:1+g.rng.IntN(len(g.catalog))]
	nScopes := 1 + g.rng.IntN(2)
	points := 0
	for s := range nScopes {
		sm := rm.ScopeMetrics().AppendEmpty()
		if g.rng.IntN(3) > 0 {
			sm.Scope().SetName(fmt.Sprintf("lib.%d", s))
			sm.Scope().SetVersion("0.1." + fmt.Sprint(g.rng.IntN(3)))
		}
		if g.rng.IntN(2) == 0 {
			sm.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
			sm.Scope().Attributes().PutStr("lib.team", "core")
		}
		if g.rng.IntN(8) == 0 {
			continue // an empty scope
		}
		for i, m := range metrics {
			// Now and then a metric comes in both scopes: one family
			// for Prometheus (series of equal labels, the last kept),
			// which the gateway must not refuse as a family twice.
			// Not deltas (a second point of a window is a retry to the
			// gateway) nor summaries (the gateway keeps the last point
			// whole, Prometheus each quantile's last value: documented).
			k := g.catalog[m].kind
			both := nScopes > 1 && !k.delta() && k != otlpSummary && m%5 == 0
			if i%nScopes == s || both {
				points += g.metric(sm.Metrics(), g.catalog[m], prev)
			}
		}
	}
	return points
}

// metric appends def with zero (rarely) to three points and returns how
// many.
func (g *otlpGen) metric(ms pmetric.MetricSlice, def otlpMetricDef, prev time.Time) int {
	m := ms.AppendEmpty()
	m.SetName(def.name)
	m.SetUnit(def.unit)
	if g.rng.IntN(2) == 0 {
		m.SetDescription("Generated " + def.name + ".")
	}
	n := 1 + g.rng.IntN(3)
	if g.rng.IntN(25) == 0 {
		n = 0
	}
	start, end := pcommon.NewTimestampFromTime(g.start), pcommon.NewTimestampFromTime(g.clock)
	if def.kind.delta() {
		start = pcommon.NewTimestampFromTime(prev)
	}
	temp := pmetric.AggregationTemporalityCumulative
	if def.kind.delta() {
		temp = pmetric.AggregationTemporalityDelta
	}
	switch def.kind {
	case otlpGauge:
		m.SetEmptyGauge()
	case otlpCounter, otlpUpDown, otlpDeltaCounter, otlpDeltaUpDown:
		s := m.SetEmptySum()
		s.SetIsMonotonic(def.kind != otlpUpDown && def.kind != otlpDeltaUpDown)
		s.SetAggregationTemporality(temp)
	case otlpHistogram, otlpDeltaHistogram:
		m.SetEmptyHistogram().SetAggregationTemporality(temp)
	case otlpExpHistogram, otlpDeltaExpHistogram:
		m.SetEmptyExponentialHistogram().SetAggregationTemporality(temp)
	case otlpSummary:
		m.SetEmptySummary()
	}
	for i := range n {
		attrs := g.attrs(i)
		// Deltas never end a series with NoRecordedValue here: what a
		// summed series does with one is not Prometheus' matter.
		nrv := !def.kind.delta() && g.rng.IntN(12) == 0
		flags := pmetric.DefaultDataPointFlags.WithNoRecordedValue(nrv)
		switch def.kind {
		case otlpGauge, otlpCounter, otlpUpDown, otlpDeltaCounter, otlpDeltaUpDown:
			var dp pmetric.NumberDataPoint
			if def.kind == otlpGauge {
				dp = m.Gauge().DataPoints().AppendEmpty()
			} else {
				dp = m.Sum().DataPoints().AppendEmpty()
			}
			if def.kind == otlpDeltaCounter {
				dp.SetDoubleValue(float64(g.rng.IntN(50)) / 4)
			} else if def.kind == otlpDeltaUpDown {
				dp.SetDoubleValue(float64(g.rng.IntN(50)-25) / 4)
			} else if g.rng.IntN(5) == 0 {
				iv := g.rng.Int64N(1000)
				if def.kind != otlpCounter && g.rng.IntN(3) == 0 {
					iv = -iv
				}
				dp.SetIntValue(iv)
			} else {
				dp.SetDoubleValue(g.value(def.kind != otlpCounter || g.rng.IntN(20) == 0))
			}
			dp.SetStartTimestamp(start)
			dp.SetTimestamp(end)
			dp.SetFlags(flags)
			attrs.CopyTo(dp.Attributes())
			if def.kind != otlpGauge {
				g.exemplars(dp.Exemplars(), end)
			}
		case otlpHistogram, otlpDeltaHistogram:
			dp := m.Histogram().DataPoints().AppendEmpty()
			counts := make([]uint64, len(def.bounds)+1)
			var total uint64
			for j := range counts {
				counts[j] = uint64(g.rng.IntN(4))
				total += counts[j]
			}
			bounds := def.bounds
			if def.kind == otlpHistogram && g.rng.IntN(15) == 0 {
				// An explicit +Inf bound, which Prometheus skips (its
				// le="+Inf" comes from the count); nothing above it.
				bounds = append(append([]float64{}, bounds...), math.Inf(1))
				counts = append(counts, 0)
			}
			dp.ExplicitBounds().FromRaw(bounds)
			dp.BucketCounts().FromRaw(counts)
			dp.SetCount(total)
			if def.kind == otlpDeltaHistogram || g.rng.IntN(8) > 0 {
				dp.SetSum(float64(total) * float64(g.rng.IntN(40)) / 8)
			}
			if def.kind == otlpHistogram && g.rng.IntN(20) == 0 {
				dp.SetSum(math.NaN())
			}
			dp.SetStartTimestamp(start)
			dp.SetTimestamp(end)
			dp.SetFlags(flags)
			attrs.CopyTo(dp.Attributes())
			g.shadow(dp.Attributes(), "le")
			g.exemplars(dp.Exemplars(), end)
		case otlpExpHistogram, otlpDeltaExpHistogram:
			dp := m.ExponentialHistogram().DataPoints().AppendEmpty()
			scale := def.scale
			if def.kind == otlpExpHistogram {
				scale = int32(g.rng.IntN(17)) - 4
			}
			dp.SetScale(scale)
			total := uint64(g.rng.IntN(3))
			dp.SetZeroCount(total)
			for _, side := range []pmetric.ExponentialHistogramDataPointBuckets{dp.Positive(), dp.Negative()} {
				side.SetOffset(int32(g.rng.IntN(21)) - 10)
				if g.rng.IntN(20) == 0 {
					side.SetOffset(int32(g.rng.IntN(1<<21)) - 1<<20)
				}
				counts := make([]uint64, g.rng.IntN(5))
				for j := range counts {
					counts[j] = uint64(g.rng.IntN(4))
					total += counts[j]
				}
				side.BucketCounts().FromRaw(counts)
			}
			dp.SetCount(total)
			if def.kind == otlpDeltaExpHistogram || g.rng.IntN(8) > 0 {
				dp.SetSum(float64(g.rng.IntN(200)-50) / 8)
			}
			dp.SetStartTimestamp(start)
			dp.SetTimestamp(end)
			dp.SetFlags(flags)
			attrs.CopyTo(dp.Attributes())
			g.shadow(dp.Attributes(), "le")
			g.exemplars(dp.Exemplars(), end)
		case otlpSummary:
			dp := m.Summary().DataPoints().AppendEmpty()
			dp.SetCount(uint64(g.rng.IntN(100)))
			dp.SetSum(g.value(false))
			for _, q := range []float64{0, 0.5, 0.9, 0.99, 1, 1.5} {
				if g.rng.IntN(2) == 0 {
					qv := dp.QuantileValues().AppendEmpty()
					qv.SetQuantile(q)
					qv.SetValue(g.value(true))
				}
			}
			dp.SetStartTimestamp(start)
			dp.SetTimestamp(end)
			dp.SetFlags(flags)
			attrs.CopyTo(dp.Attributes())
			g.shadow(dp.Attributes(), "quantile")
		}
	}
	return n
}

// shadow now and then gives a point an attribute named like the label
// its histogram or summary series set (le, quantile).
func (g *otlpGen) shadow(m pcommon.Map, name string) {
	if g.rng.IntN(15) == 0 {
		m.PutStr(name, "shadowed")
	}
}

// value returns a random float, now and then NaN or ±Inf, negative only
// when signed.
func (g *otlpGen) value(signed bool) float64 {
	switch g.rng.IntN(30) {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(1)
	case 2:
		if signed {
			return math.Inf(-1)
		}
	}
	v := float64(g.rng.IntN(100000)) / 64
	switch g.rng.IntN(40) {
	case 0:
		v = math.Copysign(0, -1)
	case 1:
		v = 1e-300
	case 2:
		v = math.MaxFloat64
	case 3:
		v = float64(1<<60 + 1)
	}
	if signed && g.rng.IntN(3) == 0 {
		v = -v
	}
	return v
}

// attrs returns the attributes of point i of a metric. series=i keeps the
// points of one metric apart after any sanitising; the rest are random:
// pairs that collide once sanitised (http.method and http_method, a.b and
// a_b, each a label of its own with UTF-8 names), non-string values, an
// empty value (Prometheus drops such a label).
func (g *otlpGen) attrs(i int) pcommon.Map {
	m := pcommon.NewMap()
	m.PutStr("series", fmt.Sprint(i))
	if g.rng.IntN(3) == 0 {
		m.PutStr("http.method", []string{"GET", "POST"}[g.rng.IntN(2)])
	}
	if g.rng.IntN(3) == 0 && !g.utf8 {
		m.PutStr("http_method", "PUT")
	}
	if g.rng.IntN(4) == 0 {
		m.PutStr("a.b", "dot")
		if !g.utf8 {
			m.PutStr("a_b", "underscore")
		}
	}
	if g.rng.IntN(5) == 0 {
		m.PutInt("retry.count", g.rng.Int64N(4))
	}
	if g.rng.IntN(6) == 0 {
		m.PutBool("cached", g.rng.IntN(2) == 0)
	}
	if g.rng.IntN(8) == 0 {
		m.PutStr("empty.value", "")
	}
	if g.rng.IntN(20) == 0 {
		m.PutStr("job", "from-an-attribute") // the resource's job wins
	}
	if g.rng.IntN(8) == 0 {
		m.PutStr("Ünïcode näme", "ö")
	}
	return m
}

// exemplars adds zero to two exemplars with trace and span ids.
func (g *otlpGen) exemplars(es pmetric.ExemplarSlice, end pcommon.Timestamp) {
	for range g.rng.IntN(3) {
		e := es.AppendEmpty()
		e.SetTimestamp(end)
		e.SetDoubleValue(float64(g.rng.IntN(400)) / 16)
		var tid pcommon.TraceID
		var sid pcommon.SpanID
		for k := range tid {
			tid[k] = byte(g.rng.IntN(256))
		}
		for k := range sid {
			sid[k] = byte(g.rng.IntN(256))
		}
		if g.rng.IntN(4) > 0 {
			e.SetTraceID(tid)
			e.SetSpanID(sid)
		}
		if g.rng.IntN(2) == 0 {
			e.FilteredAttributes().PutStr("user.id", fmt.Sprint(g.rng.IntN(100)))
		}
	}
}

// wire picks how the next request is sent: mostly protobuf to /otlp, as
// SDKs send, else OTLP JSON, Prometheus' path, gzip; with restarts, now and
// then after killing the gateway (kill -9) and starting it again.
func (g *otlpGen) wire(restarts bool) otlpWire {
	w := otlpProtobuf
	w.killBefore = restarts && g.rng.IntN(12) == 0
	if g.rng.IntN(4) == 0 {
		w.path = "/api/v1/otlp/v1/metrics"
	}
	w.json = g.rng.IntN(3) == 0
	w.gzip = g.rng.IntN(4) == 0
	return w
}
