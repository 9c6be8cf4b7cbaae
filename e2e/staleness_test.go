package e2e

import (
	"net/http"
	"testing"
)

// TestPrometheusDeletedGroupGoesStale lets each Prometheus release scrape two
// groups, deletes one, and polls until the deleted group's series leave an
// instant query while the other group's stay. The poll is bounded by
// promTimeout, below Prometheus' 5 min lookback delta, so the series can only
// have left through the staleness markers Prometheus writes when a series
// disappears from a scrape.
func TestPrometheusDeletedGroupGoesStale(t *testing.T) {
	for _, release := range []struct {
		name   string
		binary func(t *testing.T) string
	}{
		{name: "Prometheus 2.42", binary: func(t *testing.T) string { return requireTool(t, "prometheus") }},
		{name: "Prometheus 3", binary: prometheus3Binary},
	} {
		t.Run(release.name, func(t *testing.T) {
			bin := release.binary(t)
			g := startGateway(t)
			for _, job := range []string{"stale_deleted", "stale_kept"} {
				pushText(t, g, http.MethodPut, "/metrics/job/"+job+"/instance/i1", `# HELP e2e_stale_temperature_celsius A gauge.
# TYPE e2e_stale_temperature_celsius gauge
e2e_stale_temperature_celsius 21.5
# HELP e2e_stale_duration_seconds A histogram.
# TYPE e2e_stale_duration_seconds histogram
e2e_stale_duration_seconds_bucket{le="+Inf"} 2
e2e_stale_duration_seconds_sum 3
e2e_stale_duration_seconds_count 2
`)
			}
			p := startPrometheusBinary(t, bin, scrapeConfig(g))
			const q = `count by (job) ({job=~"stale_.*"})`
			// Each group: the gauge, the histogram's 3 series and the two
			// push_* gauges.
			p.requireQuery(t, q, lines(
				`""{"job"="stale_deleted"} 6`,
				`""{"job"="stale_kept"} 6`,
			))

			mustStatus(t, http.StatusAccepted, http.MethodDelete, g.url("/metrics/job/stale_deleted/instance/i1"), nil)
			p.requireQuery(t, q, `""{"job"="stale_kept"} 6`)
			p.requireTargetHealthy(t)
		})
	}
}
