package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// jobBinary is the job built once for this test run.
var jobBinary string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "otelsdk-job-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	jobBinary = filepath.Join(dir, "job")
	if out, err := exec.Command("go", "build", "-o", jobBinary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// capture is a loopback OTLP receiver that keeps every request and answers
// each with an empty ExportMetricsServiceResponse, as a receiver that took
// everything does.
type capture struct {
	*httptest.Server
	mu       sync.Mutex
	requests []captured
}

// captured is one request as it arrived.
type captured struct {
	path, contentType string
	body              []byte
}

func startCapture(t *testing.T) *capture {
	t.Helper()
	c := &capture{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.requests = append(c.requests, captured{path: r.URL.Path, contentType: r.Header.Get("Content-Type"), body: body})
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(c.Close)
	return c
}

// take returns the requests received so far and forgets them.
func (c *capture) take() []captured {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.requests
	c.requests = nil
	return r
}

// execJob runs the job binary once against endpoint and returns the
// service.instance.id it printed.
func execJob(t *testing.T, endpoint string, args ...string) string {
	t.Helper()
	cmd := exec.Command(jobBinary, args...)
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("job %v: %v\n%s", args, err, out)
	}
	m := regexp.MustCompile(`service\.instance\.id=(\S+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("job %v printed no service.instance.id:\n%s", args, out)
	}
	return string(m[1])
}

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestEachRunExportsOneProtobufRequestWithItsOwnIdentityAndKnownValues runs
// the job three times per temporality against a capturing receiver: each
// run sends exactly one protobuf request to <endpoint>/v1/metrics, with the
// resource the e2e tests derive the job from, a fresh service.instance.id,
// a start time of its own, and run r's values with the temporality asked
// for. The e2e tests compare pushgate's scrape against these values.
func TestEachRunExportsOneProtobufRequestWithItsOwnIdentityAndKnownValues(t *testing.T) {
	for _, temporality := range []string{"cumulative", "delta"} {
		t.Run(temporality, func(t *testing.T) {
			c := startCapture(t)
			ids := map[string]bool{}
			starts := map[uint64]bool{}
			for r := 1; r <= 3; r++ {
				id := execJob(t, c.URL+"/otlp", "-run", fmt.Sprint(r), "-temporality", temporality,
					"-service.name", "backup", "-service.namespace", "nightly")
				if !uuidPattern.MatchString(id) || ids[id] {
					t.Fatalf("run %d: service.instance.id %q is not a fresh random UUID (seen %v)", r, id, ids)
				}
				ids[id] = true
				reqs := c.take()
				if len(reqs) != 1 {
					t.Fatalf("run %d sent %d requests, want 1", r, len(reqs))
				}
				req := reqs[0]
				if req.path != "/otlp/v1/metrics" || req.contentType != "application/x-protobuf" {
					t.Fatalf("run %d: POST %s (%s), want /otlp/v1/metrics (application/x-protobuf)", r, req.path, req.contentType)
				}
				var msg colmetricpb.ExportMetricsServiceRequest
				if err := proto.Unmarshal(req.body, &msg); err != nil {
					t.Fatalf("run %d: decode: %v", r, err)
				}
				start := checkRequest(t, &msg, r, temporality, id)
				if starts[start] {
					t.Fatalf("run %d: start time %d already used by an earlier run", r, start)
				}
				starts[start] = true
			}
		})
	}
}

// checkRequest checks one run's request and returns the counter point's
// start time.
func checkRequest(t *testing.T, msg *colmetricpb.ExportMetricsServiceRequest, r int, temporality, id string) uint64 {
	t.Helper()
	if len(msg.ResourceMetrics) != 1 || len(msg.ResourceMetrics[0].ScopeMetrics) != 1 {
		t.Fatalf("run %d: want one resource with one scope, got %v", r, msg)
	}
	rm := msg.ResourceMetrics[0]
	attrs := attributes(rm.Resource.GetAttributes())
	for k, want := range map[string]string{"service.name": "backup", "service.namespace": "nightly", "service.instance.id": id} {
		if attrs[k] != want {
			t.Fatalf("run %d: resource %s=%q, want %q (all: %v)", r, k, attrs[k], want, attrs)
		}
	}
	wantCounter := metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	if temporality == "delta" {
		wantCounter = metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	}
	rf := float64(r)
	metrics := map[string]*metricpb.Metric{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		metrics[m.Name] = m
	}
	if len(metrics) != 5 {
		t.Fatalf("run %d: %d metrics, want 5: %v", r, len(metrics), rm.ScopeMetrics[0].Metrics)
	}
	var start uint64

	sum := metrics["batch.items.processed"].GetSum()
	if sum == nil || !sum.IsMonotonic || sum.AggregationTemporality != wantCounter || len(sum.DataPoints) != 1 {
		t.Fatalf("run %d: batch.items.processed %v, want one monotonic %v sum point", r, metrics["batch.items.processed"], wantCounter)
	}
	p := sum.DataPoints[0]
	if p.GetAsInt() != int64(r) || attributes(p.Attributes)["batch.queue"] != "main" || p.StartTimeUnixNano == 0 || p.StartTimeUnixNano >= p.TimeUnixNano {
		t.Fatalf("run %d: batch.items.processed point %v, want %d with batch.queue=main and a window", r, p, r)
	}
	start = p.StartTimeUnixNano

	ud := metrics["batch.queue.depth"].GetSum()
	if ud == nil || ud.IsMonotonic || ud.AggregationTemporality != metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE ||
		len(ud.DataPoints) != 1 || ud.DataPoints[0].GetAsInt() != int64(9*r) {
		t.Fatalf("run %d: batch.queue.depth %v, want a cumulative non-monotonic sum of %d", r, metrics["batch.queue.depth"], 9*r)
	}

	g := metrics["batch.progress"]
	if g.GetGauge() == nil || g.Unit != "1" || len(g.GetGauge().DataPoints) != 1 || g.GetGauge().DataPoints[0].GetAsDouble() != rf/4 {
		t.Fatalf("run %d: batch.progress %v, want a gauge in unit 1 of %v", r, g, rf/4)
	}

	h := metrics["batch.duration"]
	hist := h.GetHistogram()
	if hist == nil || h.Unit != "s" || hist.AggregationTemporality != wantCounter || len(hist.DataPoints) != 1 {
		t.Fatalf("run %d: batch.duration %v, want one %v histogram point in s", r, h, wantCounter)
	}
	hp := hist.DataPoints[0]
	wantBuckets := map[int][]uint64{1: {1, 1, 1, 0}, 2: {1, 1, 1, 0}, 3: {1, 0, 2, 0}}[r]
	if fmt.Sprint(hp.ExplicitBounds) != "[0.25 1 8]" || fmt.Sprint(hp.BucketCounts) != fmt.Sprint(wantBuckets) ||
		hp.Count != 3 || hp.GetSum() != 4.0625+rf/2 {
		t.Fatalf("run %d: batch.duration point %v, want bounds [0.25 1 8], counts %v, count 3, sum %v", r, hp, wantBuckets, 4.0625+rf/2)
	}

	e := metrics["batch.payload.size"]
	exp := e.GetExponentialHistogram()
	if exp == nil || e.Unit != "By" || exp.AggregationTemporality != wantCounter || len(exp.DataPoints) != 1 {
		t.Fatalf("run %d: batch.payload.size %v, want one %v exponential histogram point in By", r, e, wantCounter)
	}
	ep := exp.DataPoints[0]
	var n uint64
	for _, c := range ep.GetPositive().GetBucketCounts() {
		n += c
	}
	if ep.Count != 3 || n != 3 || ep.GetSum() != 3+4*rf {
		t.Fatalf("run %d: batch.payload.size point %v, want count 3 in positive buckets, sum %v", r, ep, 3+4*rf)
	}
	return start
}

// attributes flattens string attributes.
func attributes(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.Key] = kv.GetValue().GetStringValue()
	}
	return m
}

// TestAnExportThatKeepsFailingMakesTheJobFail runs the job against a
// receiver that answers every request 400: the job must exit non-zero, so
// that the e2e tests see a refused export as a failed run.
func TestAnExportThatKeepsFailingMakesTheJobFail(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
	}))
	t.Cleanup(s.Close)
	cmd := exec.Command(jobBinary, "-run", "1", "-timeout", "5s")
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+s.URL+"/otlp")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("job exited 0 after a 400:\n%s", out)
	}
	if !strings.Contains(string(out), "400") {
		t.Fatalf("job's error does not name the status:\n%s", out)
	}
}

// TestAPartialSuccessIsReportedAndTheJobSucceeds runs the job against a
// receiver that answers 200 with a partial_success, as a gateway does to a
// retried export whose delta points it summed already: the job prints the
// partial success and exits 0, since the request was taken and must not be
// sent again.
func TestAPartialSuccessIsReportedAndTheJobSucceeds(t *testing.T) {
	resp, err := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{
		PartialSuccess: &colmetricpb.ExportMetricsPartialSuccess{RejectedDataPoints: 3, ErrorMessage: "windows overlap"},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(resp)
	}))
	t.Cleanup(s.Close)
	cmd := exec.Command(jobBinary, "-run", "1", "-temporality", "delta", "-timeout", "5s")
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+s.URL+"/otlp")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("job failed on a partial success: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "partial_success: ") || !strings.Contains(string(out), "windows overlap") {
		t.Fatalf("job did not report the partial success:\n%s", out)
	}
}

// TestAPeriodicRunExportsAdjacentDeltaWindowsThatAddUpToTheRun runs the job
// with a short export interval and shorter pauses between its
// measurements: it sends several requests, the delta histogram's windows
// follow each other (each starts where the one before ended: the SDK
// leaves out a window without measurements, which pauses shorter than the
// interval never make), and their points add up to the run's three
// observations. The e2e tests rely on this to check that
// adjacent windows are all summed and none is taken for a retry.
func TestAPeriodicRunExportsAdjacentDeltaWindowsThatAddUpToTheRun(t *testing.T) {
	c := startCapture(t)
	execJob(t, c.URL+"/otlp", "-run", "3", "-temporality", "delta", "-interval", "100ms", "-spread", "80ms")
	reqs := c.take()
	if len(reqs) < 2 {
		t.Fatalf("%d requests, want 2 or more", len(reqs))
	}
	var count uint64
	var sum float64
	var lastEnd uint64
	windows := 0
	for _, req := range reqs {
		var msg colmetricpb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(req.body, &msg); err != nil {
			t.Fatal(err)
		}
		for _, rm := range msg.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Name != "batch.duration" {
						continue
					}
					for _, p := range m.GetHistogram().GetDataPoints() {
						if lastEnd != 0 && p.StartTimeUnixNano != lastEnd {
							t.Fatalf("window (%d, %d] does not start where the last one ended (%d)", p.StartTimeUnixNano, p.TimeUnixNano, lastEnd)
						}
						lastEnd = p.TimeUnixNano
						count += p.Count
						sum += p.GetSum()
						windows++
					}
				}
			}
		}
	}
	if windows < 2 || count != 3 || sum != 4.0625+1.5 {
		t.Fatalf("%d windows with count %d and sum %v, want 2 or more adding up to 3 and %v", windows, count, sum, 4.0625+1.5)
	}
}
