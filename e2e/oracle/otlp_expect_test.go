package oracle

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/otlptranslator"
	promconfig "github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	prw "github.com/prometheus/prometheus/storage/remote/otlptranslator/prometheusremotewrite"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// otlpSample is one sample Prometheus' translator appends.
type otlpSample struct {
	ls     labels.Labels
	family string
	typ    model.MetricType
	v      float64
	h      *histogram.Histogram
	ex     []exemplar.Exemplar
}

// stale reports whether the sample is the staleness marker Prometheus
// writes for a NoRecordedValue point.
func (s otlpSample) stale() bool {
	if s.h != nil {
		return value.IsStaleNaN(s.h.Sum)
	}
	return value.IsStaleNaN(s.v)
}

// captureAppender is a storage.AppenderV2 that keeps what the translator
// appends, so that Prometheus' own translation is the expectation.
type captureAppender struct {
	samples []otlpSample
}

// Append records one sample; histograms are copied, since the translator
// may reuse them.
func (a *captureAppender) Append(_ storage.SeriesRef, ls labels.Labels, _, _ int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AOptions) (storage.SeriesRef, error) {
	if fh != nil {
		return 0, fmt.Errorf("unexpected float histogram for %s", ls)
	}
	s := otlpSample{ls: ls.Copy(), family: opts.MetricFamilyName, typ: opts.Metadata.Type, v: v}
	if h != nil {
		s.h = h.Copy()
	}
	s.ls = withoutShadowedLabels(s)
	s.ex = append([]exemplar.Exemplar(nil), opts.Exemplars...)
	a.samples = append(a.samples, s)
	return storage.SeriesRef(len(a.samples)), nil
}

// withoutShadowedLabels drops what the gateway documents it leaves out: an
// attribute le on a histogram point and quantile on a summary point,
// which Prometheus keeps on the _sum and _count series (and on native
// histograms), while a series of the gateway is one client_model metric
// whose le and quantile belong to its buckets and quantiles.
func withoutShadowedLabels(s otlpSample) labels.Labels {
	name := s.ls.Get(model.MetricNameLabel)
	sumOrCount := name == s.family+"_sum" || name == s.family+"_count"
	switch {
	case s.h != nil, sumOrCount && (s.typ == model.MetricTypeHistogram || s.typ == model.MetricTypeUnknown):
		return labels.NewBuilder(s.ls).Del(model.BucketLabel).Labels()
	case sumOrCount && s.typ == model.MetricTypeSummary:
		return labels.NewBuilder(s.ls).Del(model.QuantileLabel).Labels()
	}
	return s.ls
}

// Commit does nothing: the samples are read from the appender.
func (a *captureAppender) Commit() error { return nil }

// Rollback does nothing either.
func (a *captureAppender) Rollback() error { return nil }

// otlpSetup is one way of running the gateway for the OTLP oracle, and the
// same settings for Prometheus' translator.
type otlpSetup struct {
	name     string
	strategy otlptranslator.TranslationStrategyOption
	utf8     bool
	// persistence runs the gateway with a journal, killed (-9) and
	// started again now and then.
	persistence bool
	// instanceInKey runs the gateway with
	// --otlp.group-by=service.instance.id: each process is a group of its
	// own, and its series carry the instance as Prometheus' do.
	instanceInKey bool
	// promote is the otlp: block's promotion settings; its
	// TranslationStrategy is not read (strategy is).
	promote promconfig.OTLPConfig
}

// otlpSetups are the gateway setups every seed of TestOTLPOracle runs
// against: the default strategy, and UTF-8 names kept as sent.
var otlpSetups = []otlpSetup{
	{name: "UnderscoreEscapingWithSuffixes-persistence", strategy: otlptranslator.UnderscoreEscapingWithSuffixes, persistence: true},
	{name: "NoUTF8EscapingWithSuffixes", strategy: otlptranslator.NoUTF8EscapingWithSuffixes, utf8: true},
	{name: "promote-all-scope-instance-key", strategy: otlptranslator.UnderscoreEscapingWithSuffixes, instanceInKey: true, promote: promconfig.OTLPConfig{
		PromoteAllResourceAttributes:      true,
		IgnoreResourceAttributes:          []string{"k8s.pod.name", "service.instance.id"},
		KeepIdentifyingResourceAttributes: true,
		PromoteScopeMetadata:              true,
	}},
}

// flags returns the gateway's command line for s; dir holds the journal.
func (s otlpSetup) flags(dir string) []string {
	f := []string{"--otlp.translation-strategy=" + string(s.strategy)}
	if s.persistence {
		f = append(f, "--persistence.file="+filepath.Join(dir, "pushgate.journal"))
	}
	if s.utf8 {
		f = append(f, "--push.enable-utf8-names")
	}
	if s.instanceInKey {
		f = append(f, "--otlp.group-by=service.instance.id")
	}
	if s.promote.PromoteAllResourceAttributes {
		f = append(f, "--otlp.promote-all-resource-attributes")
	}
	for _, a := range s.promote.PromoteResourceAttributes {
		f = append(f, "--otlp.promote-resource-attributes="+a)
	}
	for _, a := range s.promote.IgnoreResourceAttributes {
		f = append(f, "--otlp.ignore-resource-attributes="+a)
	}
	if s.promote.KeepIdentifyingResourceAttributes {
		f = append(f, "--otlp.keep-identifying-resource-attributes")
	}
	if s.promote.PromoteScopeMetadata {
		f = append(f, "--otlp.promote-scope-metadata")
	}
	return f
}

// settings returns the translator's settings as Prometheus' receiver
// derives them from its otlp: block with this strategy.
func (s otlpSetup) settings(delta bool) prw.Settings {
	return prw.Settings{
		AddMetricSuffixes:                 s.strategy.ShouldAddSuffixes(),
		AllowUTF8:                         !s.strategy.ShouldEscape(),
		AllowDeltaTemporality:             delta,
		PromoteResourceAttributes:         prw.NewPromoteResourceAttributes(s.promote),
		KeepIdentifyingResourceAttributes: s.promote.KeepIdentifyingResourceAttributes,
		PromoteScopeMetadata:              s.promote.PromoteScopeMetadata,
		// The otlp: block's defaults (config.DefaultOTLPConfig): "_x" is
		// "key_x", and "a..b" keeps both underscores.
		LabelNameUnderscoreSanitization:      true,
		LabelNamePreserveMultipleUnderscores: true,
	}
}

// translate runs Prometheus' translator over md's cumulative metrics (and
// gauges and summaries), and separately over its delta metrics with delta
// temporality allowed, and returns both sample lists. Deltas are summed by
// the model as Prometheus' otlp-deltatocumulative would for one process.
func (s otlpSetup) translate(ctx context.Context, md pmetric.Metrics) (cum, delta []otlpSample, err error) {
	// Three passes: cumulative points; delta counters and histograms;
	// delta up-down counters, which Prometheus marks unknown like the
	// other deltas and the gateway sums into gauges (which carry no
	// exemplars), so their samples are marked gauges here.
	for pass := range 3 {
		part := pmetric.NewMetrics()
		md.CopyTo(part)
		// The gateway refuses the points of a resource without
		// service.name (it has no job for a group key; documented), which
		// Prometheus stores without a job label, or with a job attribute's.
		part.ResourceMetrics().RemoveIf(func(rm pmetric.ResourceMetrics) bool {
			_, ok := rm.Resource().Attributes().Get("service.name")
			return !ok
		})
		for i := range part.ResourceMetrics().Len() {
			sms := part.ResourceMetrics().At(i).ScopeMetrics()
			for j := range sms.Len() {
				sms.At(j).Metrics().RemoveIf(func(m pmetric.Metric) bool {
					upDown := m.Type() == pmetric.MetricTypeSum && !m.Sum().IsMonotonic()
					return pass != 0 && !isDelta(m) || pass == 0 && isDelta(m) || pass == 1 && upDown || pass == 2 && !upDown
				})
			}
		}
		app := &captureAppender{}
		if _, err := prw.NewPrometheusConverter(app).FromMetrics(ctx, part, s.settings(pass > 0)); err != nil {
			return nil, nil, fmt.Errorf("Prometheus' translator: %w", err)
		}
		switch pass {
		case 0:
			cum = app.samples
		case 1:
			delta = append(delta, app.samples...)
		case 2:
			for _, smp := range app.samples {
				if smp.family != "target_info" {
					smp.typ = model.MetricTypeGauge
				}
				delta = append(delta, smp)
			}
		}
	}
	return cum, delta, nil
}

// isDelta reports whether m has delta temporality.
func isDelta(m pmetric.Metric) bool {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		return m.Sum().AggregationTemporality() == pmetric.AggregationTemporalityDelta
	case pmetric.MetricTypeHistogram:
		return m.Histogram().AggregationTemporality() == pmetric.AggregationTemporalityDelta
	case pmetric.MetricTypeExponentialHistogram:
		return m.ExponentialHistogram().AggregationTemporality() == pmetric.AggregationTemporalityDelta
	}
	return false
}

// otlpValue is a series' value in the model: a float or a native
// histogram.
type otlpValue struct {
	v  float64
	nh *nativeValue
	// ex are the exemplars expected on the series, rendered.
	ex []string
}

// String renders the value so that equal values render alike.
func (v otlpValue) String() string {
	if v.nh != nil {
		return withExemplars(v.nh.String(), v.ex)
	}
	return withExemplars(floatString(v.v), v.ex)
}

// nativeValue is a native histogram by what Prometheus compares: schema,
// zero bucket, count, sum and the buckets by index, so that two layouts
// of the same buckets (spans split or joined, empty buckets listed or not)
// are equal.
type nativeValue struct {
	schema           int32
	zeroThreshold    float64
	zeroCount, count float64
	sum              float64
	pos, neg         map[int32]float64
}

// newNativeValue reads fh's buckets.
func newNativeValue(fh *histogram.FloatHistogram) *nativeValue {
	n := &nativeValue{schema: fh.Schema, zeroThreshold: fh.ZeroThreshold, zeroCount: fh.ZeroCount, count: fh.Count, sum: fh.Sum,
		pos: map[int32]float64{}, neg: map[int32]float64{}}
	for it := fh.PositiveBucketIterator(); it.Next(); {
		n.pos[it.At().Index] += it.At().Count
	}
	for it := fh.NegativeBucketIterator(); it.Next(); {
		n.neg[it.At().Index] += it.At().Count
	}
	return n
}

// add returns the bucket-by-bucket sum of n and o (of one schema, as the
// catalog's delta histograms are), as summing deltas for one process gives.
// Prometheus' FloatHistogram.Add is not used: it drops buckets far from
// the others (a delta point at offset -474907 beside buckets 4 to 7 lost
// its buckets and kept its count).
func (n *nativeValue) add(o *nativeValue) *nativeValue {
	r := &nativeValue{schema: n.schema, zeroThreshold: n.zeroThreshold, zeroCount: n.zeroCount + o.zeroCount,
		count: n.count + o.count, sum: n.sum + o.sum, pos: map[int32]float64{}, neg: map[int32]float64{}}
	if n.schema != o.schema {
		r.sum = math.NaN() // shows as a difference; the catalog never does it
	}
	for _, side := range []struct{ dst, a, b map[int32]float64 }{{r.pos, n.pos, o.pos}, {r.neg, n.neg, o.neg}} {
		for i, c := range side.a {
			side.dst[i] += c
		}
		for i, c := range side.b {
			side.dst[i] += c
		}
	}
	return r
}

func (n *nativeValue) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "native{schema=%d zero=%g/%s count=%s sum=%s", n.schema, n.zeroThreshold, floatString(n.zeroCount), floatString(n.count), floatString(n.sum))
	for _, side := range []struct {
		sign    string
		buckets map[int32]float64
	}{{"+", n.pos}, {"-", n.neg}} {
		idx := make([]int, 0, len(side.buckets))
		for i, c := range side.buckets {
			if c != 0 {
				idx = append(idx, int(i))
			}
		}
		sort.Ints(idx)
		for _, i := range idx {
			fmt.Fprintf(&b, " %s%d:%s", side.sign, i, floatString(side.buckets[int32(i)]))
		}
	}
	b.WriteString("}")
	return b.String()
}

// otlpModel is what the gateway should serve: per group (its job), per
// family, per series identity, the value.
type otlpModel struct {
	// groups are keyed by groupKey.
	groups map[string]map[string]map[string]otlpValue
	// keepInstance says instance is part of the group key and compared.
	keepInstance bool
	// exemplarNamer sanitises exemplar label names (nil: kept as sent).
	exemplarNamer *otlptranslator.LabelNamer
}

// newOTLPModel returns an empty model of a gateway of setup.
func newOTLPModel(setup otlpSetup) *otlpModel {
	m := &otlpModel{groups: map[string]map[string]map[string]otlpValue{}, keepInstance: setup.instanceInKey}
	if !setup.utf8 {
		m.exemplarNamer = &otlptranslator.LabelNamer{UnderscoreLabelSanitization: true, PreserveMultipleUnderscores: true}
	}
	return m
}

// apply adds one accepted request's translation: each group's cumulative
// families that the request carries are replaced (the request's POST
// semantics; a NoRecordedValue point, Prometheus' staleness marker, leaves
// its series out), and delta samples are added to their series' sums.
func (m *otlpModel) apply(cum, delta []otlpSample) {
	carried := map[[2]string]bool{}
	for i, s := range cum {
		job := m.groupKey(s.ls)
		if job == "" {
			continue // cannot happen: translate keeps resources with service.name only
		}
		key := [2]string{job, s.family}
		if !carried[key] {
			carried[key] = true
			m.family(job, s.family, true)
		}
		id := m.identity(s.ls)
		if s.stale() {
			// The point's series ends here, also when an earlier point
			// of this request set it (the last point of a series wins).
			delete(m.family(job, s.family, false), id)
			if s.typ == model.MetricTypeHistogram && s.h == nil && s.ls.Get(model.MetricNameLabel) == s.family+"_count" {
				// A NoRecordedValue histogram point without a sum gets
				// no stale _sum from Prometheus' receiver, so an
				// earlier point's _sum of the same labels lives on
				// there; the gateway removes the point's whole
				// histogram (documented), its _sum too.
				sumLabels := labels.NewBuilder(s.ls).Set(model.MetricNameLabel, s.family+"_sum").Labels()
				delete(m.family(job, s.family, false), m.identity(sumLabels))
			}
			continue
		}
		fam := m.family(job, s.family, false)
		fam[id] = m.value(s)
		// A histogram point without a sum gets no _sum series from
		// Prometheus' receiver, but a protobuf scrape always carries
		// one (its parser reads an absent sample_sum as 0), so the
		// gateway can only serve 0 there: expect that, and only that.
		// The translator appends a point's _sum right before its
		// _count; without it, an earlier point's _sum of the same
		// labels stays in Prometheus, while the gateway's later point
		// replaces the whole histogram (documented), so 0 it is.
		if s.typ == model.MetricTypeHistogram && s.h == nil && s.ls.Get(model.MetricNameLabel) == s.family+"_count" {
			sumLabels := labels.NewBuilder(s.ls).Set(model.MetricNameLabel, s.family+"_sum").Labels()
			if i == 0 || !labels.Equal(cum[i-1].ls, sumLabels) {
				fam[m.identity(sumLabels)] = otlpValue{v: 0}
			}
		}
	}
	for _, s := range delta {
		job := m.groupKey(s.ls)
		if job == "" {
			continue // cannot happen: translate keeps resources with service.name only
		}
		id := m.identity(s.ls)
		if s.family == "target_info" {
			// target_info comes with both halves of a resource; it is
			// replaced, not summed.
			key := [2]string{job, s.family}
			if !carried[key] {
				carried[key] = true
				m.family(job, s.family, true)
			}
			m.family(job, s.family, false)[id] = m.value(s)
			continue
		}
		fam := m.family(job, s.family, false)
		old, ok := fam[id]
		nv := m.value(s)
		if ok && len(nv.ex) == 0 {
			// A summed series keeps its latest exemplar when a point
			// brings none, as Prometheus' exemplar storage still holds it.
			nv.ex = old.ex
		}
		switch {
		case !ok:
			fam[id] = nv
		case nv.nh != nil && old.nh != nil:
			fam[id] = otlpValue{nh: old.nh.add(nv.nh), ex: nv.ex}
		default:
			fam[id] = otlpValue{v: old.v + nv.v, ex: nv.ex}
		}
	}
}

// family returns group job's family, emptied when reset.
func (m *otlpModel) family(job, family string, reset bool) map[string]otlpValue {
	g := m.groups[job]
	if g == nil {
		g = map[string]map[string]otlpValue{}
		m.groups[job] = g
	}
	if reset || g[family] == nil {
		g[family] = map[string]otlpValue{}
	}
	return g[family]
}

// series returns every series the model holds, by identity.
func (m *otlpModel) series() map[string]string {
	out := map[string]string{}
	for _, g := range m.groups {
		for _, f := range g {
			for id, v := range f {
				out[id] = v.String()
			}
		}
	}
	return out
}

// value converts a translated sample to a model value.
func (m *otlpModel) value(s otlpSample) otlpValue {
	ex := expectedExemplars(s, s.ex, m.exemplarNamer)
	if s.h != nil {
		return otlpValue{nh: newNativeValue(s.h.ToFloat(nil)), ex: ex}
	}
	return otlpValue{v: s.v, ex: ex}
}

// groupKey returns the key of the group a series of ls belongs to: its job,
// and its instance when that is in the gateway's group key ("" without a
// job).
func (m *otlpModel) groupKey(ls labels.Labels) string {
	job := ls.Get(model.JobLabel)
	if job == "" || !m.keepInstance {
		return job
	}
	return job + "\xff" + ls.Get(model.InstanceLabel)
}

// identity is otlpIdentity with the model's instance rule.
func (m *otlpModel) identity(ls labels.Labels) string { return otlpIdentity(ls, m.keepInstance) }

// otlpIdentity is the identity the comparison uses: the name and the
// sorted non-empty labels, le and quantile as numbers (the translator
// writes le="1", a scrape gives le="1.0"), without instance unless
// keepInstance. The gateway's group key leaves service.instance.id out by
// default (--otlp.group-by), so its series carry no instance while
// Prometheus' receiver takes it from service.instance.id: a documented
// difference, not a defect.
func otlpIdentity(ls labels.Labels, keepInstance bool) string {
	var name string
	var pairs []string
	ls.Range(func(l labels.Label) {
		switch {
		case l.Name == model.MetricNameLabel:
			name = l.Value
		case l.Value == "", l.Name == model.InstanceLabel && !keepInstance:
		case l.Name == model.BucketLabel || l.Name == model.QuantileLabel:
			pairs = append(pairs, fmt.Sprintf("%q=%q", l.Name, numberString(l.Value)))
		default:
			pairs = append(pairs, fmt.Sprintf("%q=%q", l.Name, l.Value))
		}
	})
	sort.Strings(pairs)
	return fmt.Sprintf("%q{%s}", name, strings.Join(pairs, ","))
}

// numberString renders a number in one spelling.
func numberString(s string) string {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// floatString renders a float so that floats render alike when they are
// equal (-0 as 0; the gateway serves a summary quantile of -0 as 0, which
// PromQL compares equal), and every NaN as "NaN".
func floatString(f float64) string {
	if math.IsNaN(f) {
		return "NaN"
	}
	if f == 0 {
		f = 0
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// scrapedSeries returns the scraped series of the model's groups, by
// identity, without the groups' push times.
func (m *otlpModel) scrapedSeries(res *scrapeResult) (map[string]string, error) {
	exemplars, err := scrapedExemplars(res.body, res.header, m.keepInstance)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, s := range res.samples {
		if _, ok := m.groups[m.groupKey(s.ls)]; !ok || timeNames[s.ls.Get(model.MetricNameLabel)] {
			continue
		}
		id := m.identity(s.ls)
		switch {
		case s.h != nil:
			out[id] = newNativeValue(s.h.ToFloat(nil)).String()
		case s.fh != nil:
			out[id] = newNativeValue(s.fh).String()
		default:
			out[id] = floatString(s.v)
		}
		out[id] = withExemplars(out[id], exemplars[id])
	}
	return out, nil
}
