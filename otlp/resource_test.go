package otlp

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

func targetInfo(g Group) *dto.MetricFamily {
	for _, mf := range g.Families {
		if mf.GetName() == targetInfoName {
			return mf
		}
	}
	return nil
}

func TestTargetInfo(t *testing.T) {
	cases := []struct {
		name     string
		resource []string
		mod      func(*Settings)
		noPoints bool
		want     string // "" for no target_info
	}{
		{"the resource's other attributes", []string{"service.name", "svc", "service.instance.id", "u", "host.name", "h", "os.type", "linux"}, nil, false,
			`{host_name="h",os_type="linux"}`},
		{"none when only identifying attributes", []string{"service.name", "svc", "service.namespace", "ns", "service.instance.id", "u"}, nil, false, ""},
		{"identifying attributes kept when asked", []string{"service.name", "svc", "host.name", "h"},
			func(s *Settings) { s.KeepIdentifyingResourceAttributes = true }, false, `{host_name="h",service_name="svc"}`},
		{"promoted attributes stay", []string{"service.name", "svc", "host.name", "h"},
			func(s *Settings) { s.PromoteResourceAttributes = []string{"host.name"} }, false, `{host_name="h"}`},
		{"no scope labels", []string{"service.name", "svc", "host.name", "h"},
			func(s *Settings) { s.PromoteScopeMetadata = true }, false, `{host_name="h"}`},
		{"none for a resource without points", []string{"service.name", "svc", "host.name", "h"}, nil, true, ""},
		{"group-by labels are the key's", []string{"service.name", "svc", "env", "prod", "host.name", "h"},
			func(s *Settings) { s.GroupBy = []string{"env"} }, false, `{host_name="h"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			md, ms := request(c.resource...)
			if c.noPoints {
				ms.AppendEmpty().SetName("empty")
				ms.At(0).SetEmptyGauge()
			} else {
				addGauge(ms, "g", "", 1)
			}
			gs := translateAll(t, md, nil, c.mod)
			ti := targetInfo(gs[0])
			switch {
			case c.want == "" && ti != nil:
				t.Errorf("target_info %v", ti)
			case c.want != "" && ti == nil:
				t.Errorf("no target_info")
			case c.want != "":
				if ti.GetType() != dto.MetricType_GAUGE || ti.GetHelp() != "Target metadata" || len(ti.Metric) != 1 || ti.Metric[0].GetGauge().GetValue() != 1 {
					t.Errorf("target_info %v", ti)
				}
				if got := labelString(ti.Metric[0]); got != c.want {
					t.Errorf("labels %s, want %s", got, c.want)
				}
			}
		})
	}
}

func TestAMetricWithoutPointsIsNoFamily(t *testing.T) {
	md, ms := request("service.name", "svc")
	ms.AppendEmpty().SetName("empty")
	ms.At(0).SetEmptySum().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	g := translateOne(t, md, nil)
	if len(g.Families) != 0 || g.Rejected != 0 {
		t.Errorf("group %+v", g)
	}
}
