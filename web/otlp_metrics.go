package web

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// HELP texts of the OTLP metrics, shared by their registration and
// OwnFamilies.
const (
	otlpRequestsHelp       = "OTLP/HTTP metrics requests, by outcome: success (every point stored), partial (stored, some points refused in partial_success), refused (4xx) and failed (5xx)."
	otlpPointsHelp         = "OTLP data points received, by result: accepted (stored) or rejected (reported in partial_success, or in a request refused with a 4xx after it was decoded)."
	otlpDeltaResetsHelp    = "Delta series restarted from a new point that could not be added to the sum (explicit histogram bounds or an exponential histogram's zero bucket changed)."
	otlpDeltaConflictsHelp = "Pushes of OTLP groups retried because another request changed the group after its states (summed deltas, newest point times) were read."
)

// otlpMetrics are the OTLP ingest's own metrics.
type otlpMetrics struct {
	requests       *prometheus.CounterVec
	points         *prometheus.CounterVec
	deltaResets    prometheus.Counter
	deltaConflicts prometheus.Counter
}

// newOTLPMetrics returns the OTLP metrics, every label value present from
// the start (the sets are fixed), and their collectors to register.
func newOTLPMetrics() (otlpMetrics, []prometheus.Collector) {
	m := otlpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pushgate_otlp_requests_total", Help: otlpRequestsHelp,
		}, []string{"outcome"}),
		points: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pushgate_otlp_points_total", Help: otlpPointsHelp,
		}, []string{"result"}),
		deltaResets: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pushgate_otlp_delta_resets_total", Help: otlpDeltaResetsHelp,
		}),
		deltaConflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pushgate_otlp_delta_conflicts_total", Help: otlpDeltaConflictsHelp,
		}),
	}
	for _, o := range []string{"success", "partial", "refused", "failed"} {
		m.requests.WithLabelValues(o)
	}
	for _, r := range []string{"accepted", "rejected"} {
		m.points.WithLabelValues(r)
	}
	return m, []prometheus.Collector{m.requests, m.points, m.deltaResets, m.deltaConflicts}
}

// otlpOwnFamilies describes the OTLP metrics for OwnFamilies.
func otlpOwnFamilies() []*dto.MetricFamily {
	fam := func(name, help string) *dto.MetricFamily {
		return &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: dto.MetricType_COUNTER.Enum()}
	}
	return []*dto.MetricFamily{
		fam("pushgate_otlp_requests_total", otlpRequestsHelp),
		fam("pushgate_otlp_points_total", otlpPointsHelp),
		fam("pushgate_otlp_delta_resets_total", otlpDeltaResetsHelp),
		fam("pushgate_otlp_delta_conflicts_total", otlpDeltaConflictsHelp),
	}
}
