package otlp

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/seriesid"
)

// familyHeader is what a metric's family is called and typed as, and the
// sample names it claims.
type familyHeader struct {
	name, help, unit string
	typ              dto.MetricType
	claims           []string
}

// familyType is the type of a cumulative metric's family.
func familyType(om otlptranslator.Metric) dto.MetricType {
	switch om.Type {
	case otlptranslator.MetricTypeMonotonicCounter:
		return dto.MetricType_COUNTER
	case otlptranslator.MetricTypeGauge, otlptranslator.MetricTypeNonMonotonicCounter:
		return dto.MetricType_GAUGE
	case otlptranslator.MetricTypeSummary:
		return dto.MetricType_SUMMARY
	}
	return dto.MetricType_HISTOGRAM
}

// header names, types and describes metric as Prometheus' receiver does:
// the name from the strategy's metric namer (unit and _total / _ratio
// suffixes when the strategy adds them), HELP from the description, the
// unit as Prometheus records it in its metadata (UnitNamer with UTF-8
// off, whatever the strategy: "s" is "seconds", "1" nothing), and the type
// a cumulative point of the metric has (a monotonic sum is a counter, a
// non-monotonic one a gauge).
func (t *Translator) header(m pmetric.Metric) (familyHeader, error) {
	om := otlptranslator.Metric{Name: m.Name(), Unit: m.Unit(), Type: otlptranslator.MetricTypeUnknown}
	var h familyHeader
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		om.Type, h.typ = otlptranslator.MetricTypeGauge, dto.MetricType_GAUGE
	case pmetric.MetricTypeSum:
		if m.Sum().IsMonotonic() {
			om.Type, h.typ = otlptranslator.MetricTypeMonotonicCounter, dto.MetricType_COUNTER
		} else {
			om.Type, h.typ = otlptranslator.MetricTypeNonMonotonicCounter, dto.MetricType_GAUGE
		}
	case pmetric.MetricTypeHistogram:
		om.Type, h.typ = otlptranslator.MetricTypeHistogram, dto.MetricType_HISTOGRAM
	case pmetric.MetricTypeExponentialHistogram:
		om.Type, h.typ = otlptranslator.MetricTypeExponentialHistogram, dto.MetricType_HISTOGRAM
	case pmetric.MetricTypeSummary:
		om.Type, h.typ = otlptranslator.MetricTypeSummary, dto.MetricType_SUMMARY
	default:
		return h, fmt.Errorf("metric %q has no data of a known type", m.Name())
	}
	names, err := t.names.get(om, t.buildNames)
	if err != nil {
		return h, fmt.Errorf("metric %q: %w", m.Name(), err)
	}
	h.name, h.unit, h.claims = names.name, names.unit, names.claims
	h.help = m.Description()
	if !utf8.ValidString(h.help) {
		// Prometheus keeps the points; a HELP text that is not UTF-8
		// would make every text scrape fail, so its bad bytes go.
		h.help = strings.ToValidUTF8(h.help, "\uFFFD")
	}
	return h, nil
}

// headerNames are a metric's family name and unit, and the sample names
// the family claims (see claimFamily).
type headerNames struct {
	name, unit string
	claims     []string
}

// buildNames builds a metric's family name and unit.
func (t *Translator) buildNames(om otlptranslator.Metric) (headerNames, error) {
	name, err := t.metricNamer.Build(om)
	if err != nil {
		return headerNames{}, err
	}
	if !exposition.ValidMetricName(name, t.settings.UTF8Names) {
		return headerNames{}, fmt.Errorf("name %q is not valid", name)
	}
	typ := familyType(om)
	out := headerNames{name: name, claims: seriesid.Claims(name, typ, seriesid.ClaimSchemes(t.settings.UTF8Names))}
	if om.Unit != "" {
		out.unit = t.unitNamer.Build(om.Unit)
		if !utf8.ValidString(out.unit) {
			return headerNames{}, fmt.Errorf("its unit is not valid UTF-8")
		}
	}
	return out, nil
}

// maxCachedNames bounds the name cache: names come from clients.
const maxCachedNames = 4096

// nameCache remembers the names built for a (name, unit, type): a job
// sends the same metrics on every push, and the namer allocates about five
// times per name (BenchmarkTranslate: 79 → 52 allocations per request).
type nameCache struct {
	mu sync.RWMutex
	m  map[otlptranslator.Metric]headerNames
}

// get returns the names of om, built by build on a miss. Failures are not
// remembered.
func (c *nameCache) get(om otlptranslator.Metric, build func(otlptranslator.Metric) (headerNames, error)) (headerNames, error) {
	c.mu.RLock()
	n, ok := c.m[om]
	c.mu.RUnlock()
	if ok {
		return n, nil
	}
	n, err := build(om)
	if err != nil {
		return n, err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[otlptranslator.Metric]headerNames)
	}
	if len(c.m) < maxCachedNames {
		// Cloned: the request's strings must not be kept alive.
		om.Name, om.Unit = strings.Clone(om.Name), strings.Clone(om.Unit)
		c.m[om] = n
	}
	c.mu.Unlock()
	return n, nil
}
