package payload

import (
	"fmt"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// Content types of the OTLP/HTTP renderings.
const (
	OTLPProtobufContentType = "application/x-protobuf"
	OTLPJSONContentType     = "application/json"
)

// OTLP returns push seq of group groupIndex as an OTLP metrics request
// that a gateway translating as Prometheus 3 does (the default
// UnderscoreEscapingWithSuffixes) stores as exactly the series Families
// holds: counters are cumulative monotonic sums named without "_total"
// (the translation adds it), gauges gauges, the histogram an explicit
// histogram, the summary a summary; every point has the timestamp at and
// starts an hour before it. The resource carries service.name = Job.
func OTLP(groupIndex, seq int, at time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", Job)
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("pushgate-bench")
	ts := pcommon.NewTimestampFromTime(at)
	start := pcommon.NewTimestampFromTime(at.Add(-time.Hour))
	for _, mf := range Families(groupIndex, seq) {
		m := sm.Metrics().AppendEmpty()
		m.SetName(strings.TrimSuffix(mf.GetName(), "_total"))
		m.SetDescription(mf.GetHelp())
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			sum := m.SetEmptySum()
			sum.SetIsMonotonic(true)
			sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			for _, dm := range mf.Metric {
				p := sum.DataPoints().AppendEmpty()
				numberPoint(p, dm, dm.GetCounter().GetValue(), start, ts)
			}
		case dto.MetricType_GAUGE:
			g := m.SetEmptyGauge()
			for _, dm := range mf.Metric {
				numberPoint(g.DataPoints().AppendEmpty(), dm, dm.GetGauge().GetValue(), start, ts)
			}
		case dto.MetricType_HISTOGRAM:
			h := m.SetEmptyHistogram()
			h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			for _, dm := range mf.Metric {
				p := h.DataPoints().AppendEmpty()
				setAttributes(p.Attributes(), dm)
				p.SetStartTimestamp(start)
				p.SetTimestamp(ts)
				dh := dm.GetHistogram()
				p.SetCount(dh.GetSampleCount())
				p.SetSum(dh.GetSampleSum())
				var prev uint64
				for _, b := range dh.Bucket {
					p.ExplicitBounds().Append(b.GetUpperBound())
					p.BucketCounts().Append(b.GetCumulativeCount() - prev)
					prev = b.GetCumulativeCount()
				}
				p.BucketCounts().Append(dh.GetSampleCount() - prev)
			}
		case dto.MetricType_SUMMARY:
			s := m.SetEmptySummary()
			for _, dm := range mf.Metric {
				p := s.DataPoints().AppendEmpty()
				setAttributes(p.Attributes(), dm)
				p.SetStartTimestamp(start)
				p.SetTimestamp(ts)
				ds := dm.GetSummary()
				p.SetCount(ds.GetSampleCount())
				p.SetSum(ds.GetSampleSum())
				for _, q := range ds.Quantile {
					qv := p.QuantileValues().AppendEmpty()
					qv.SetQuantile(q.GetQuantile())
					qv.SetValue(q.GetValue())
				}
			}
		}
	}
	return md
}

// numberPoint fills a sum's or gauge's point.
func numberPoint(p pmetric.NumberDataPoint, dm *dto.Metric, v float64, start, ts pcommon.Timestamp) {
	setAttributes(p.Attributes(), dm)
	p.SetStartTimestamp(start)
	p.SetTimestamp(ts)
	p.SetDoubleValue(v)
}

// setAttributes copies a series' labels into point attributes.
func setAttributes(attrs pcommon.Map, dm *dto.Metric) {
	for _, l := range dm.Label {
		attrs.PutStr(l.GetName(), l.GetValue())
	}
}

// OTLPProtobuf renders OTLP(groupIndex, seq, at) as an
// ExportMetricsServiceRequest in protobuf (OTLPProtobufContentType).
func OTLPProtobuf(groupIndex, seq int, at time.Time) ([]byte, error) {
	b, err := pmetricotlp.NewExportRequestFromMetrics(OTLP(groupIndex, seq, at)).MarshalProto()
	if err != nil {
		return nil, fmt.Errorf("encode OTLP request: %w", err)
	}
	return b, nil
}

// OTLPJSON renders OTLP(groupIndex, seq, at) in OTLP JSON
// (OTLPJSONContentType).
func OTLPJSON(groupIndex, seq int, at time.Time) ([]byte, error) {
	b, err := pmetricotlp.NewExportRequestFromMetrics(OTLP(groupIndex, seq, at)).MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode OTLP request: %w", err)
	}
	return b, nil
}
