package otlp

import (
	"fmt"
	"hash/maphash"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/pushgate/pushgate/seriesid"
)

// maxAheadTime is how far ahead of the gateway's clock a point's timestamp
// may be: Prometheus' receiver refuses samples later than that (its
// remote-write and OTLP appenders share the bound).
const maxAheadTime = 10 * time.Minute

// Translator turns decoded OTLP requests into groups under fixed Settings.
// It holds no state between requests and is safe for concurrent use.
type Translator struct {
	settings    Settings
	utf8Allowed bool
	metricNamer otlptranslator.MetricNamer
	labelNamer  otlptranslator.LabelNamer
	unitNamer   otlptranslator.UnitNamer
	// promote is the set of resource attributes promoted, or, when
	// promoteAll, the set of those not promoted.
	promote    map[string]struct{}
	promoteAll bool
	names      nameCache
	// targetInfoClaims are the sample names target_info claims.
	targetInfoClaims []string
}

// NewTranslator validates s (see Settings.Validate, which trims s's
// attribute lists in place) and returns a Translator for it.
func NewTranslator(s Settings) (*Translator, error) {
	s.PromoteResourceAttributes = append([]string(nil), s.PromoteResourceAttributes...)
	s.IgnoreResourceAttributes = append([]string(nil), s.IgnoreResourceAttributes...)
	s.GroupBy = append([]string(nil), s.GroupBy...)
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("otlp settings: %w", err)
	}
	strategy, _ := ParseTranslationStrategy(s.TranslationStrategy)
	s.TranslationStrategy = string(strategy)
	t := &Translator{
		settings:    s,
		utf8Allowed: !strategy.ShouldEscape(),
		metricNamer: otlptranslator.NewMetricNamer("", strategy),
		labelNamer:  labelNamer(strategy),
		promoteAll:  s.PromoteAllResourceAttributes,
	}
	t.targetInfoClaims = seriesid.Claims(targetInfoName, dto.MetricType_GAUGE, seriesid.ClaimSchemes(s.UTF8Names))
	list := s.PromoteResourceAttributes
	if s.PromoteAllResourceAttributes {
		list = s.IgnoreResourceAttributes
	}
	t.promote = make(map[string]struct{}, len(list))
	for _, a := range list {
		t.promote[a] = struct{}{}
	}
	return t, nil
}

// Translate turns a decoded request into groups, as Prometheus 3's OTLP
// receiver (v3.16) would store it, one Group per distinct group key in the
// order the resources first name it: each ResourceMetrics maps to the
// group urlLabels names (the grouping labels of the request's URL, when it
// has any; they must hold job) or else to the one its resource derives
// (see Group), and resources of one key are merged into one group, their
// series of equal labels the last one kept, as Prometheus keeps the last
// sample. now is the gateway's clock, against which a point's timestamp
// may be at most 10 minutes ahead.
//
// Points that cannot be stored are refused one by one and counted in their
// group's Rejected, the first reason in Reason; a resource whose group
// cannot be derived gives a Group with nil Labels that carries only its
// refusals. The error is for a request that cannot be translated at all
// (URL grouping labels without a job).
func (t *Translator) Translate(md pmetric.Metrics, urlLabels map[string]string, now time.Time) ([]Group, error) {
	key, err := sortedURLLabels(urlLabels)
	if err != nil {
		return nil, err
	}
	tr := &translation{t: t, maxTime: pcommon.NewTimestampFromTime(now.Add(maxAheadTime))}
	tr.hash.SetSeed(maphash.MakeSeed())
	tr.arena.reserve(sizeOf(md))
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		if err := tr.resource(rms.At(i), key); err != nil {
			return nil, err
		}
	}
	out := make([]Group, len(tr.groups))
	for i, g := range tr.groups {
		out[i] = g.finish()
	}
	return out, nil
}

// translation is the state of one Translate call.
type translation struct {
	t       *Translator
	maxTime pcommon.Timestamp
	arena   arena
	hash    maphash.Hash
	groups  []*groupBuilder
	// byKey finds a group by its key's canonical form.
	byKey map[string]*groupBuilder
	// Scratch space for a series' labels and sorted attributes.
	labels labelList
	sorted []label
	// claims are the request's names, see claimFamily.
	claims claims
	// exemplars is scratch space for a point's exemplars, deltas for a
	// native histogram's bucket deltas.
	exemplars []exemplarRef
	deltas    []int64
	// source is the Window.Source of the resource being translated.
	source uint64
}

// group returns the builder of the group r belongs to.
func (tr *translation) group(r *resourceState) *groupBuilder {
	if g, ok := tr.byKey[r.keyID]; ok {
		return g
	}
	g := newGroupBuilder(r.key)
	if tr.t.settings.UTF8Names {
		for _, l := range r.key {
			_ = tr.claimLabel(l.name) // the gateway checks the key; here it only claims its names
		}
	}
	if tr.byKey == nil {
		tr.byKey = make(map[string]*groupBuilder, 1)
	}
	tr.byKey[r.keyID] = g
	tr.groups = append(tr.groups, g)
	return g
}

// refusedGroup returns a builder for a resource that has no group.
func (tr *translation) refusedGroup() *groupBuilder {
	g := newGroupBuilder(nil)
	tr.groups = append(tr.groups, g)
	return g
}

// resource translates one ResourceMetrics.
func (tr *translation) resource(rm pmetric.ResourceMetrics, urlKey []label) error {
	res := rm.Resource()
	r, reason, err := tr.t.newResourceState(res, urlKey)
	if err != nil {
		return err
	}
	if r == nil {
		// A resource without points and without a group is nothing.
		if n := countPoints(rm); n > 0 {
			tr.refusedGroup().refuse(n, reason)
		}
		return nil
	}
	g := tr.group(r)
	tr.source = resourceSource(res)
	sms := rm.ScopeMetrics()
	hasPoints := false
	for i := 0; i < sms.Len(); i++ {
		sm := sms.At(i)
		sc, err := tr.t.scopeLabels(sm)
		ms := sm.Metrics()
		if err != nil {
			// Prometheus skips such a scope's metrics before it looks
			// at their points: they do not make target_info.
			for j := 0; j < ms.Len(); j++ {
				if n := metricPoints(ms.At(j)); n > 0 {
					g.refuse(n, fmt.Sprintf("metric %q: %v", ms.At(j).Name(), err))
				}
			}
			continue
		}
		for j := 0; j < ms.Len(); j++ {
			m := ms.At(j)
			if metricPoints(m) > 0 {
				hasPoints = true
			}
			tr.metric(g, r, sc, m)
		}
	}
	if !hasPoints {
		return nil
	}
	// Prometheus writes target_info for a resource with at least one
	// point, refused ones included.
	ls, ok, err := tr.t.targetInfo(tr, res, r)
	if err != nil {
		refuseTargetInfo(g, err)
		return nil
	}
	if !ok {
		return nil
	}
	h := familyHeader{name: targetInfoName, help: targetInfoHelp, typ: dto.MetricType_GAUGE, claims: tr.t.targetInfoClaims}
	if err := tr.checkLabelNames(ls); err != nil {
		refuseTargetInfo(g, err)
		return nil
	}
	if f, err := tr.family(g, h, false, 1); err != nil {
		refuseTargetInfo(g, err)
	} else {
		m := tr.arena.metrics.new()
		m.Gauge = tr.arena.gauges.new()
		m.Gauge.Value = tr.arena.float(1)
		tr.add(g, f, ls, m, nil)
	}
	return nil
}

// refuseTargetInfo refuses a resource's target_info series for err. It is
// counted as one refused point, the sample Prometheus would have stored:
// uncounted, the refusal showed nowhere when an earlier refusal's reason
// was the one reported, nor to a client that reads only
// rejected_data_points.
func refuseTargetInfo(g *groupBuilder, err error) {
	g.refuse(1, "target_info left out: "+err.Error())
}

// family returns g's family for h, its name claimed for the request.
func (tr *translation) family(g *groupBuilder, h familyHeader, delta bool, n int) (*familyBuilder, error) {
	if err := tr.claimFamily(h.name, h.typ, h.claims); err != nil {
		return nil, err
	}
	return g.family(&tr.arena, h, delta, n)
}

// metric translates one metric into its family in g.
func (tr *translation) metric(g *groupBuilder, r *resourceState, sc labelList, m pmetric.Metric) {
	n := metricPoints(m)
	h, err := tr.t.header(m)
	if err != nil {
		g.refuse(n, err.Error())
		return
	}
	if n == 0 {
		// Prometheus drops a metric without points ("empty data
		// points"); an empty family here would remove the stored one.
		return
	}
	delta := false
	if temp, ok := temporality(m); ok {
		switch {
		case temp == pmetric.AggregationTemporalityCumulative:
		case temp == pmetric.AggregationTemporalityDelta && tr.t.settings.Delta == Accumulate:
			delta = true
		default:
			// Prometheus' words, for a delta point refused as for an
			// unspecified or unknown temporality.
			g.refuse(n, fmt.Sprintf("invalid temporality and type combination for metric %q", m.Name()))
			return
		}
	}
	f, err := tr.family(g, h, delta, n)
	if err != nil {
		g.refuse(n, fmt.Sprintf("metric %q: %v", m.Name(), err))
		return
	}
	p := pointContext{tr: tr, g: g, r: r, scope: sc, f: f, otelName: m.Name()}
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		p.numbers(m.Gauge().DataPoints(), false, false)
	case pmetric.MetricTypeSum:
		p.numbers(m.Sum().DataPoints(), true, m.Sum().IsMonotonic())
	case pmetric.MetricTypeHistogram:
		p.histograms(m.Histogram().DataPoints())
	case pmetric.MetricTypeExponentialHistogram:
		p.exponentialHistograms(m.ExponentialHistogram().DataPoints())
	case pmetric.MetricTypeSummary:
		p.summaries(m.Summary().DataPoints())
	}
}

// temporality returns a metric's aggregation temporality, and false for the
// kinds that have none (gauges and summaries).
func temporality(m pmetric.Metric) (pmetric.AggregationTemporality, bool) {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		return m.Sum().AggregationTemporality(), true
	case pmetric.MetricTypeHistogram:
		return m.Histogram().AggregationTemporality(), true
	case pmetric.MetricTypeExponentialHistogram:
		return m.ExponentialHistogram().AggregationTemporality(), true
	}
	return 0, false
}

// metricPoints returns how many points m carries.
func metricPoints(m pmetric.Metric) int {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints().Len()
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints().Len()
	case pmetric.MetricTypeHistogram:
		return m.Histogram().DataPoints().Len()
	case pmetric.MetricTypeExponentialHistogram:
		return m.ExponentialHistogram().DataPoints().Len()
	case pmetric.MetricTypeSummary:
		return m.Summary().DataPoints().Len()
	}
	return 0
}

// countPoints returns how many points a ResourceMetrics carries.
func countPoints(rm pmetric.ResourceMetrics) int {
	n := 0
	sms := rm.ScopeMetrics()
	for i := 0; i < sms.Len(); i++ {
		ms := sms.At(i).Metrics()
		for j := 0; j < ms.Len(); j++ {
			n += metricPoints(ms.At(j))
		}
	}
	return n
}

// scopeLabels returns the labels Prometheus adds to every series of a
// scope when PromoteScopeMetadata is on and the scope has a name:
// otel_scope_<attribute> for each scope attribute, then otel_scope_name,
// otel_scope_version and otel_scope_schema_url (an empty one absent).
func (t *Translator) scopeLabels(sm pmetric.ScopeMetrics) (labelList, error) {
	s := sm.Scope()
	if !t.settings.PromoteScopeMetadata || s.Name() == "" {
		return nil, nil
	}
	var ls labelList
	for k, v := range s.Attributes().All() {
		name, err := t.attrName("otel_scope_" + k)
		if err != nil {
			return nil, fmt.Errorf("scope attribute %q: %w", k, err)
		}
		ls.set(name, v.AsString())
	}
	ls.set("otel_scope_name", s.Name())
	ls.set("otel_scope_version", s.Version())
	ls.set("otel_scope_schema_url", sm.SchemaUrl())
	return ls, nil
}
