package otlp

import (
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

func addSummary(ms pmetric.MetricSlice, name string, quantiles ...float64) pmetric.SummaryDataPoint {
	m := ms.AppendEmpty()
	m.SetName(name)
	dp := m.SetEmptySummary().DataPoints().AppendEmpty()
	dp.SetStartTimestamp(testStart)
	dp.SetTimestamp(testTS)
	dp.SetCount(4)
	dp.SetSum(2.5)
	for _, q := range quantiles {
		v := dp.QuantileValues().AppendEmpty()
		v.SetQuantile(q)
		v.SetValue(q * 10)
	}
	return dp
}

func TestSummaries(t *testing.T) {
	md, ms := request("service.name", "svc")
	putAttrs(addSummary(ms, "rpc.duration", 0.5, 0.99).Attributes(), "quantile", "x", "k", "v")
	g := translateOne(t, md, nil)
	m := family(t, g, "rpc_duration").Metric[0]
	if labelString(m) != `{k="v"}` {
		t.Errorf("labels %s", labelString(m))
	}
	s := m.GetSummary()
	if s.GetSampleCount() != 4 || s.GetSampleSum() != 2.5 || len(s.Quantile) != 2 || s.Quantile[1].GetQuantile() != 0.99 || s.Quantile[1].GetValue() != 9.9 {
		t.Errorf("summary %v", s)
	}
	if !s.GetCreatedTimestamp().AsTime().Equal(testStart.AsTime()) {
		t.Errorf("created %v", s.GetCreatedTimestamp())
	}
}

func TestASummaryGivingAQuantileTwiceIsRefused(t *testing.T) {
	md, ms := request("service.name", "svc")
	addSummary(ms, "s", 0.5, 0.5)
	g := translateOne(t, md, nil)
	if g.Rejected != 1 || !strings.Contains(g.Reason, "quantile 0.5 twice") {
		t.Errorf("rejected %d: %s", g.Rejected, g.Reason)
	}
}
