package otlp

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

func TestFamiliesAreNamedAndTypedAsPrometheusNamesThem(t *testing.T) {
	cases := []struct {
		name     string
		strategy string
		utf8     bool
		build    func(ms pmetric.MetricSlice)
		want     string
		typ      dto.MetricType
		unit     string
	}{
		{"a gauge with a unit gets the unit suffix", "", false,
			func(ms pmetric.MetricSlice) { addGauge(ms, "memory.usage", "By", 1) }, "memory_usage_bytes", dto.MetricType_GAUGE, "bytes"},
		{"a gauge of unit 1 gets _ratio", "", false,
			func(ms pmetric.MetricSlice) { addGauge(ms, "cpu.utilization", "1", 1) }, "cpu_utilization_ratio", dto.MetricType_GAUGE, ""},
		{"a monotonic cumulative sum is a counter with _total", "", false,
			func(ms pmetric.MetricSlice) {
				addSum(ms, "http.requests", "{request}", true, pmetric.AggregationTemporalityCumulative, 3)
			}, "http_requests_total", dto.MetricType_COUNTER, ""},
		{"a non-monotonic cumulative sum is a gauge without _total", "", false,
			func(ms pmetric.MetricSlice) {
				addSum(ms, "queue.size", "", false, pmetric.AggregationTemporalityCumulative, 3)
			}, "queue_size", dto.MetricType_GAUGE, ""},
		{"a rate unit becomes _per_", "", false,
			func(ms pmetric.MetricSlice) { addGauge(ms, "throughput", "By/s", 1) }, "throughput_bytes_per_second", dto.MetricType_GAUGE, "bytes_per_second"},
		{"without suffixes only the characters change", "UnderscoreEscapingWithoutSuffixes", false,
			func(ms pmetric.MetricSlice) {
				addSum(ms, "http.requests", "s", true, pmetric.AggregationTemporalityCumulative, 3)
			}, "http_requests", dto.MetricType_COUNTER, "seconds"},
		{"NoUTF8EscapingWithSuffixes keeps dots and adds suffixes", "NoUTF8EscapingWithSuffixes", true,
			func(ms pmetric.MetricSlice) {
				addSum(ms, "http.requests", "s", true, pmetric.AggregationTemporalityCumulative, 3)
			}, "http.requests_seconds_total", dto.MetricType_COUNTER, "seconds"},
		{"NoTranslation keeps the name as it is", "NoTranslation", true,
			func(ms pmetric.MetricSlice) {
				addSum(ms, "http.requests", "s", true, pmetric.AggregationTemporalityCumulative, 3)
			}, "http.requests", dto.MetricType_COUNTER, "seconds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			md, ms := request("service.name", "svc")
			c.build(ms)
			g := translateOne(t, md, func(s *Settings) { s.TranslationStrategy, s.UTF8Names = c.strategy, c.utf8 })
			if g.Rejected != 0 {
				t.Fatalf("rejected %d: %s", g.Rejected, g.Reason)
			}
			mf := family(t, g, c.want)
			if mf.GetType() != c.typ {
				t.Errorf("type %v, want %v", mf.GetType(), c.typ)
			}
			if mf.GetUnit() != c.unit {
				t.Errorf("unit %q, want %q", mf.GetUnit(), c.unit)
			}
		})
	}
}

func TestHelpComesFromTheDescription(t *testing.T) {
	md, ms := request("service.name", "svc")
	addGauge(ms, "g", "", 1)
	ms.At(0).SetDescription("what it is")
	g := translateOne(t, md, nil)
	if got := family(t, g, "g").GetHelp(); got != "what it is" {
		t.Errorf("help %q", got)
	}
}

func TestADescriptionThatIsNotUTF8KeepsItsPoints(t *testing.T) {
	md, ms := request("service.name", "svc")
	addGauge(ms, "g", "", 1)
	ms.At(0).SetDescription("bad \xff byte")
	g := translateOne(t, md, nil)
	if got := family(t, g, "g").GetHelp(); got != "bad \uFFFD byte" || g.Rejected != 0 {
		t.Errorf("help %q, rejected %d", got, g.Rejected)
	}
}
