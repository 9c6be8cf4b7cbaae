package otlp

import (
	"fmt"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/pushgate/pushgate/exposition"
)

// familyHeader is what a metric's family is called and typed as.
type familyHeader struct {
	name, help, unit string
	typ              dto.MetricType
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
	name, err := t.metricNamer.Build(om)
	if err != nil {
		return h, fmt.Errorf("metric %q: %w", m.Name(), err)
	}
	if !exposition.ValidMetricName(name, t.settings.UTF8Names) {
		return h, fmt.Errorf("metric %q: name %q is not valid", m.Name(), name)
	}
	h.name = name
	h.help = m.Description()
	if !utf8.ValidString(h.help) {
		return h, fmt.Errorf("metric %q: its description is not valid UTF-8", m.Name())
	}
	if u := m.Unit(); u != "" {
		h.unit = t.unitNamer.Build(u)
		if !utf8.ValidString(h.unit) {
			return h, fmt.Errorf("metric %q: its unit is not valid UTF-8", m.Name())
		}
	}
	return h, nil
}
