package web

import (
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/scrape"
)

// The HELP texts of the vectors, shared by their registration and
// OwnFamilies so that a family reads the same whether it has samples yet or
// not.
const (
	requestsHelp     = "Total HTTP requests processed by the Pushgateway, excluding scrapes."
	pushDurationHelp = "HTTP request duration for pushes to the Pushgateway."
	pushSizeHelp     = "HTTP request size for pushes to the Pushgateway."
	rejectedHelp     = "Requests answered with an error, by handler and reason (path, body, encoding, too_large, inconsistent, persistence, method, loading, too_many_series, too_many_labels, label_name_too_long, label_value_too_long, store_full_groups, store_full_series, ...)."
)

// metrics are the gateway's own HTTP metrics. The pushgateway_* names and
// labels are the reference's, so existing dashboards keep working; the
// pushgate_* ones are ours.
type metrics struct {
	requests     *prometheus.CounterVec
	pushDuration *prometheus.SummaryVec
	pushSize     *prometheus.SummaryVec
	rejected     *prometheus.CounterVec
	otlp         otlpMetrics
}

// newMetrics registers the HTTP metrics, the build info, the store's size
// gauges and what scrapes precompressed in reg. The gauges read the store
// being served (Options.CurrentStore).
func newMetrics(reg *prometheus.Registry, opts Options, scrapes *scrape.Writer) (*metrics, error) {
	build := opts.Build
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pushgateway_http_requests_total",
			Help: requestsHelp,
		}, []string{"code", "handler", "method"}),
		pushDuration: prometheus.NewSummaryVec(prometheus.SummaryOpts{
			Name:       "pushgateway_http_push_duration_seconds",
			Help:       pushDurationHelp,
			Objectives: map[float64]float64{0.1: 0.01, 0.5: 0.05, 0.9: 0.01},
		}, []string{"method"}),
		pushSize: prometheus.NewSummaryVec(prometheus.SummaryOpts{
			Name:       "pushgateway_http_push_size_bytes",
			Help:       pushSizeHelp,
			Objectives: map[float64]float64{0.1: 0.01, 0.5: 0.05, 0.9: 0.01},
		}, []string{"method"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pushgate_rejected_requests_total",
			Help: rejectedHelp,
		}, []string{"handler", "reason"}),
	}
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "pushgateway_build_info",
		Help: "A metric with a constant '1' value labeled by version, revision, branch, goversion from which pushgateway was built, and the goos and goarch for the build.",
		ConstLabels: prometheus.Labels{
			"version": build.Version, "revision": build.Revision, "branch": build.Branch,
			"goversion": runtime.Version(), "goos": runtime.GOOS, "goarch": runtime.GOARCH, "tags": build.Tags,
		},
	})
	buildInfo.Set(1)
	groups := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "pushgate_groups",
		Help: "Number of metric groups stored.",
	}, func() float64 { return float64(opts.CurrentStore().Stats().Groups) })
	series := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "pushgate_series",
		Help: "Number of series stored, push_time_seconds and push_failure_time_seconds included.",
	}, func() float64 { return float64(opts.CurrentStore().Stats().Series) })
	limitGauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pushgate_limit",
		Help: "Configured limits, by flag name without the dashes; 0 means no limit. Compare pushgate_groups and pushgate_series with the store.* ones.",
	}, []string{"name"})
	limitGauge.WithLabelValues("push.max-body-bytes").Set(float64(opts.MaxBodyBytes))
	for name, v := range opts.CurrentStore().Limits().Values() {
		limitGauge.WithLabelValues(name).Set(float64(v))
	}
	precompressed := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "pushgate_scrape_precompressed_bytes_total",
		Help: "Text bytes compressed into gzip segments between gzip scrapes (--web.gzip-precompress-cpu).",
	}, func() float64 { return float64(scrapes.PrecompressedBytes()) })
	otlpm, otlpCollectors := newOTLPMetrics()
	m.otlp = otlpm
	for _, c := range append([]prometheus.Collector{m.requests, m.pushDuration, m.pushSize, m.rejected, buildInfo, groups, series, limitGauge, precompressed}, otlpCollectors...) {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return m, nil
}

// reject counts a rejected request.
func (m *metrics) reject(handler, reason string) {
	if handler == "" {
		handler = "metrics"
	}
	m.rejected.WithLabelValues(handler, reason).Inc()
}

// observePush records the duration of a push that began at start, and its
// approximate size.
func (m *metrics) observePush(r *http.Request, start time.Time) {
	method := methodLabel(r.Method)
	m.pushDuration.WithLabelValues(method).Observe(time.Since(start).Seconds())
	m.pushSize.WithLabelValues(method).Observe(float64(approximateRequestSize(r)))
}

// approximateRequestSize estimates the bytes of a request: request line,
// headers and body.
func approximateRequestSize(r *http.Request) int {
	s := len(r.Method) + len(r.URL.String()) + len(r.Proto) + len(r.Host)
	for name, values := range r.Header {
		s += len(name)
		for _, v := range values {
			s += len(v)
		}
	}
	if r.ContentLength > 0 {
		s += int(r.ContentLength)
	}
	return s
}

// count serves a request through serve, counting its response by code,
// handler (name) and method.
func (h *Handler) count(name string, w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter)) {
	rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
	serve(rec)
	h.metrics.requests.WithLabelValues(codeLabel(rec.code), name, methodLabel(r.Method)).Inc()
}

// codeLabel returns code as a label value, without allocating for the
// codes a push gets.
func codeLabel(code int) string {
	switch code {
	case http.StatusOK:
		return "200"
	case http.StatusAccepted:
		return "202"
	case http.StatusBadRequest:
		return "400"
	}
	return strconv.Itoa(code)
}

// methodLabel returns the method in lower case, without allocating for the
// standard ones.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet:
		return "get"
	case http.MethodPut:
		return "put"
	case http.MethodPost:
		return "post"
	case http.MethodDelete:
		return "delete"
	case http.MethodHead:
		return "head"
	}
	return strings.ToLower(m)
}

// statusRecorder remembers the status code written.
type statusRecorder struct {
	http.ResponseWriter
	code    int
	written bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.written {
		s.code = code
		s.written = true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	s.written = true
	return s.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// OwnFamilies describes the gateway's own metric families that may have no
// samples yet (vectors before their first request), so that the store can
// reserve their names and types from the start, and a scrape can give a
// pushed family of the same name the gateway's HELP before the first sample.
func OwnFamilies() []*dto.MetricFamily {
	fam := func(name, help string, typ dto.MetricType) *dto.MetricFamily {
		return &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: typ.Enum()}
	}
	return append([]*dto.MetricFamily{
		fam("pushgateway_http_requests_total", requestsHelp, dto.MetricType_COUNTER),
		fam("pushgateway_http_push_duration_seconds", pushDurationHelp, dto.MetricType_SUMMARY),
		fam("pushgateway_http_push_size_bytes", pushSizeHelp, dto.MetricType_SUMMARY),
		fam("pushgate_rejected_requests_total", rejectedHelp, dto.MetricType_COUNTER),
	}, otlpOwnFamilies()...)
}
