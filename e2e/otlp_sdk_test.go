package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// The OTLP SDK tests run real OpenTelemetry SDKs (Go in e2e/otelsdk, Node in
// e2e/node) as batch jobs: every run is a new process with its own SDK start
// time and a random service.instance.id, configured only by
// OTEL_EXPORTER_OTLP_ENDPOINT=<gateway>/otlp. Each job is run once with a
// cumulative and once with a delta counter (variants), three runs each.
// The values each run records are fixed (see otlpRunValues), so the tests
// know what the last run left and what the delta runs add up to.

// otlpNamespace is every job's service.namespace: the job label is
// "otel-e2e/<service.name>".
const otlpNamespace = "otel-e2e"

// otlpJobTimeout bounds one run, its export retries included (the cluster
// test's last run waits for a new leader).
const otlpJobTimeout = 90 * time.Second

// otelJob is one SDK batch job.
type otelJob struct {
	// name is the job's part of service.name ("go", "node-json", ...).
	name string
	// exec runs one run of the job as a new process and returns its
	// output.
	exec func(ctx context.Context, o otlpRunOptions) ([]byte, error)
}

// otlpRunOptions say how to run a job once.
type otlpRunOptions struct {
	// endpoint is the value of OTEL_EXPORTER_OTLP_ENDPOINT.
	endpoint string
	// run is the run number, temporality "cumulative" or "delta" and
	// service the resource's service.name.
	run                  int
	temporality, service string
	// env (NAME=value) is added to the process environment.
	env []string
	// periodic makes the run export on a short interval while it works,
	// with pauses (shorter than the interval) between its measurements, so
	// that one run exports adjacent windows, each starting where the one
	// before ended, and once more at shutdown.
	periodic bool
}

// otlpVariant is a job with one temporality for its counter and histograms.
type otlpVariant struct {
	job         otelJob
	temporality string
}

// otlpVariants returns every job in both temporalities.
func otlpVariants(jobs []otelJob) []otlpVariant {
	var vs []otlpVariant
	for _, j := range jobs {
		for _, temporality := range []string{"cumulative", "delta"} {
			vs = append(vs, otlpVariant{job: j, temporality: temporality})
		}
	}
	return vs
}

// service is the variant's service.name.
func (v otlpVariant) service() string { return v.job.name + "-" + v.temporality }

// jobLabel is the job label the gateway derives from the resource.
func (v otlpVariant) jobLabel() string { return otlpNamespace + "/" + v.service() }

var instanceIDPattern = regexp.MustCompile(`service\.instance\.id=([0-9a-f-]{36})`)

// run runs run r of the variant as a new process against the gateway at
// baseURL, with env added to its environment, and returns the
// service.instance.id the process chose.
func (v otlpVariant) run(t *testing.T, baseURL string, r int, env ...string) string {
	t.Helper()
	return v.runWith(t, baseURL, otlpRunOptions{run: r, env: env})
}

// runWith is run with more options; o's endpoint, temporality and service
// are the variant's.
func (v otlpVariant) runWith(t *testing.T, baseURL string, o otlpRunOptions) string {
	t.Helper()
	o.endpoint, o.temporality, o.service = baseURL+"/otlp", v.temporality, v.service()
	r := o.run
	ctx, cancel := context.WithTimeout(context.Background(), otlpJobTimeout+30*time.Second)
	defer cancel()
	out, err := v.job.exec(ctx, o)
	if err != nil {
		t.Fatalf("%s run %d against %s: %v\n%s", v.service(), r, baseURL, err, out)
	}
	m := instanceIDPattern.FindSubmatch(out)
	if m == nil {
		t.Fatalf("%s run %d printed no service.instance.id:\n%s", v.service(), r, out)
	}
	return string(m[1])
}

// otlpExpect is what a variant's group must hold after some runs.
type otlpExpect struct {
	// items is batch_items_processed_total{batch_queue="main"}.
	items float64
	// depth is batch_queue_depth, progress batch_progress_ratio.
	depth, progress float64
	// durBuckets are batch_duration_seconds' cumulative counts at le 0.25,
	// 1 and 8; durCount and durSum its count and sum.
	durBuckets         [3]float64
	durCount, durSum   float64
	sizeCount, sizeSum float64
}

// otlpRunValues is what run r records (the jobs' documentation lists the
// same): the counter adds r, the up-down counter 9r, the gauge is r/4, the
// histogram observes 0.0625, r/2 and 4 (bounds 0.25, 1, 8), the exponential
// histogram 1, 2 and 4r. Every value is exact in binary floating point.
func otlpRunValues(r int) otlpExpect {
	rf := float64(r)
	e := otlpExpect{
		items: rf, depth: 9 * rf, progress: rf / 4,
		durCount: 3, durSum: 4.0625 + rf/2,
		sizeCount: 3, sizeSum: 3 + 4*rf,
	}
	// 0.0625 ≤ 0.25; r/2 ≤ 1 for runs 1 and 2; 4 ≤ 8.
	e.durBuckets = [3]float64{1, 1, 3}
	if rf/2 <= 1 {
		e.durBuckets[1] = 2
	}
	return e
}

// otlpExpectAfter is what a variant's group holds after runs 1..n: the last
// run's values for cumulative instruments, the sum over the runs for delta
// ones (the counter and both histograms of the delta variant).
func otlpExpectAfter(temporality string, n int) otlpExpect {
	last := otlpRunValues(n)
	if temporality != "delta" {
		return last
	}
	sum := last
	sum.items, sum.durCount, sum.durSum, sum.sizeCount, sum.sizeSum = 0, 0, 0, 0, 0
	sum.durBuckets = [3]float64{}
	for r := 1; r <= n; r++ {
		v := otlpRunValues(r)
		sum.items += v.items
		sum.durCount += v.durCount
		sum.durSum += v.durSum
		sum.sizeCount += v.sizeCount
		sum.sizeSum += v.sizeSum
		for i := range sum.durBuckets {
			sum.durBuckets[i] += v.durBuckets[i]
		}
	}
	return sum
}

// fmtValue writes v as Prometheus' query API does.
func fmtValue(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// requirePrometheus checks, through Prometheus 3's query API, that the
// variant's job is one group (one push_time_seconds series, no instance
// label on any of its series) holding e.
func (v otlpVariant) requirePrometheus(t *testing.T, p *prometheusServer, e otlpExpect) {
	t.Helper()
	job := v.jobLabel()
	series := func(name, labels, value string) string {
		return fmt.Sprintf(`%q{"job"=%q%s} %s`, name, job, labels, value)
	}
	p.requireQuery(t, fmt.Sprintf(`{job=%q,__name__=~"batch_.*",__name__!="batch_payload_size_bytes"}`, job), lines(
		series("batch_duration_seconds_bucket", `,"le"="0.25"`, fmtValue(e.durBuckets[0])),
		series("batch_duration_seconds_bucket", `,"le"="1.0"`, fmtValue(e.durBuckets[1])),
		series("batch_duration_seconds_bucket", `,"le"="8.0"`, fmtValue(e.durBuckets[2])),
		series("batch_duration_seconds_bucket", `,"le"="+Inf"`, fmtValue(e.durCount)),
		series("batch_duration_seconds_count", "", fmtValue(e.durCount)),
		series("batch_duration_seconds_sum", "", fmtValue(e.durSum)),
		fmt.Sprintf(`"batch_items_processed_total"{"batch_queue"="main","job"=%q} %s`, job, fmtValue(e.items)),
		series("batch_progress_ratio", "", fmtValue(e.progress)),
		series("batch_queue_depth", "", fmtValue(e.depth)),
	))
	// The exponential histogram is one native histogram series.
	p.requireQuery(t, fmt.Sprintf(`histogram_count(batch_payload_size_bytes{job=%q})`, job),
		fmt.Sprintf(`""{"job"=%q} %s`, job, fmtValue(e.sizeCount)))
	p.requireQuery(t, fmt.Sprintf(`histogram_sum(batch_payload_size_bytes{job=%q})`, job),
		fmt.Sprintf(`""{"job"=%q} %s`, job, fmtValue(e.sizeSum)))
	p.requireQuery(t, fmt.Sprintf(`count by (job) (push_time_seconds{job=%q})`, job),
		fmt.Sprintf(`""{"job"=%q} 1`, job))
	// The values above arrived, so a series with an instance label would
	// have arrived with them.
	p.requireQuery(t, fmt.Sprintf(`{job=%q,instance!=""}`, job), "")
}

// checkScrape scrapes the gateway at baseURL in the protobuf format (which
// carries native histograms) and checks that the variant's job is one group
// holding e, and that no label anywhere holds one of the runs'
// service.instance.ids. It returns an error instead of failing, for polls.
func (v otlpVariant) checkScrape(baseURL string, e otlpExpect, instanceIDs []string) error {
	return checkOTLPGroup(baseURL, lbl("job", v.jobLabel()), e, instanceIDs)
}

// checkOTLPGroup is checkScrape for the group whose key is key (job, and
// instance when it has one).
func checkOTLPGroup(baseURL string, key map[string]string, e otlpExpect, instanceIDs []string) error {
	job := key["job"]
	mfs, err := scrapeProtobuf(baseURL + "/metrics")
	if err != nil {
		return err
	}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				for _, id := range instanceIDs {
					if lp.GetValue() == id {
						return fmt.Errorf("%s%s carries the service.instance.id of a run", name, labelString(m.GetLabel()))
					}
				}
			}
		}
	}
	one := func(name string, typ dto.MetricType, extra ...string) (*dto.Metric, error) {
		want := lbl(append([]string{"job", job, "instance", key["instance"]}, extra...)...)
		if key["instance"] == "" {
			delete(want, "instance")
		}
		mf := mfs[name]
		if mf == nil {
			return nil, fmt.Errorf("no family %s", name)
		}
		if mf.GetType() != typ {
			return nil, fmt.Errorf("%s is a %s, want %s", name, mf.GetType(), typ)
		}
		var found []*dto.Metric
		for _, m := range mf.GetMetric() {
			if labelValue(m, "job") == job {
				found = append(found, m)
			}
		}
		if len(found) != 1 || !labelsEqualIgnoringEmpty(found[0].GetLabel(), want) {
			var have []string
			for _, m := range found {
				have = append(have, labelString(m.GetLabel()))
			}
			return nil, fmt.Errorf("%s of job %s: series %v, want exactly one with %v", name, job, have, want)
		}
		return found[0], nil
	}
	for _, c := range []struct {
		name  string
		typ   dto.MetricType
		value float64
		extra []string
	}{
		{"batch_items_processed_total", dto.MetricType_COUNTER, e.items, []string{"batch_queue", "main"}},
		{"batch_queue_depth", dto.MetricType_GAUGE, e.depth, nil},
		{"batch_progress_ratio", dto.MetricType_GAUGE, e.progress, nil},
	} {
		m, err := one(c.name, c.typ, c.extra...)
		if err != nil {
			return err
		}
		if got := sampleValue(m); got != c.value {
			return fmt.Errorf("%s of job %s = %v, want %v", c.name, job, got, c.value)
		}
	}
	m, err := one("batch_duration_seconds", dto.MetricType_HISTOGRAM)
	if err != nil {
		return err
	}
	h := m.GetHistogram()
	got := map[float64]float64{}
	for _, b := range h.GetBucket() {
		got[b.GetUpperBound()] = float64(b.GetCumulativeCount())
	}
	want := map[float64]float64{0.25: e.durBuckets[0], 1: e.durBuckets[1], 8: e.durBuckets[2]}
	if c, ok := got[inf]; ok {
		want[inf] = c
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || float64(h.GetSampleCount()) != e.durCount || h.GetSampleSum() != e.durSum {
		return fmt.Errorf("batch_duration_seconds of job %s: buckets %v count %d sum %v, want buckets %v count %v sum %v",
			job, got, h.GetSampleCount(), h.GetSampleSum(), want, e.durCount, e.durSum)
	}
	m, err = one("batch_payload_size_bytes", dto.MetricType_HISTOGRAM)
	if err != nil {
		return err
	}
	h = m.GetHistogram()
	count := float64(h.GetSampleCount())
	if h.SampleCountFloat != nil {
		count = h.GetSampleCountFloat()
	}
	if h.Schema == nil || len(h.GetBucket()) != 0 {
		return fmt.Errorf("batch_payload_size_bytes of job %s is not a native histogram: %v", job, h)
	}
	if count != e.sizeCount || h.GetSampleSum() != e.sizeSum {
		return fmt.Errorf("batch_payload_size_bytes of job %s: count %v sum %v, want %v and %v", job, count, h.GetSampleSum(), e.sizeCount, e.sizeSum)
	}
	groups, err := apiGroupsErr(baseURL)
	if err != nil {
		return err
	}
	var keys []map[string]string
	for _, g := range groups {
		var labels map[string]string
		if err := json.Unmarshal(g["labels"], &labels); err != nil {
			return fmt.Errorf("/api/v1/metrics group labels %s: %w", g["labels"], err)
		}
		if labels["job"] == job {
			keys = append(keys, labels)
		}
	}
	if len(keys) != 1 || keys[0]["instance"] != key["instance"] {
		return fmt.Errorf("/api/v1/metrics has groups %v for job %s, want one with instance %q", keys, job, key["instance"])
	}
	return nil
}

var inf = func() float64 { f, _ := strconv.ParseFloat("+Inf", 64); return f }()

// labelsEqualIgnoringEmpty is labelsEqual where an empty label value is the
// same as an absent label (the gateway serves instance="" on a group
// without an instance).
func labelsEqualIgnoringEmpty(lps []*dto.LabelPair, want map[string]string) bool {
	var kept []*dto.LabelPair
	for _, lp := range lps {
		if lp.GetValue() != "" {
			kept = append(kept, lp)
		}
	}
	return labelsEqual(kept, want)
}

// scrapeProtobuf GETs u asking for the delimited protobuf format and decodes
// it.
func scrapeProtobuf(u string) (families, error) {
	r, err := doRequest(bgCtx, http.MethodGet, u, nil,
		"Accept", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited")
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", u, err)
	}
	if r.Status != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", u, r)
	}
	dec := expfmt.NewDecoder(bytes.NewReader(r.Body), expfmt.NewFormat(expfmt.TypeProtoDelim))
	mfs := families{}
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); errors.Is(err, io.EOF) {
			return mfs, nil
		} else if err != nil {
			return nil, fmt.Errorf("scrape %s: protobuf: %w", u, err)
		}
		mfs[mf.GetName()] = mf
	}
}

// apiGroupsErr is apiMetrics without a testing.T, for polls.
func apiGroupsErr(baseURL string) ([]apiGroup, error) {
	r, err := doRequest(bgCtx, http.MethodGet, baseURL+"/api/v1/metrics", nil)
	if err != nil {
		return nil, err
	}
	var res struct {
		Status string     `json:"status"`
		Data   []apiGroup `json:"data"`
	}
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &res) != nil || res.Status != "success" {
		return nil, fmt.Errorf("/api/v1/metrics: %s", r)
	}
	return res.Data, nil
}

// requireScrape polls checkScrape until it passes.
func (v otlpVariant) requireScrape(t *testing.T, baseURL string, e otlpExpect, instanceIDs []string) {
	t.Helper()
	eventually(t, waitTimeout, func() error { return v.checkScrape(baseURL, e, instanceIDs) })
}

// runOTLPSDKScenarios runs the SDK scenarios of issue 23 for jobs: three
// runs seen by Prometheus 3, a kill -9 between runs 2 and 3, a leader
// replica killed between runs 2 and 3 (and the answer to run 3's export
// lost, so that the SDK retries it), and a captured request replayed with
// curl.
func runOTLPSDKScenarios(t *testing.T, jobs []otelJob) {
	variants := otlpVariants(jobs)
	t.Run("three runs leave one group per job with the last values and the summed deltas, as Prometheus 3 scrapes it", func(t *testing.T) {
		testOTLPSDKThreeRuns(t, prometheus3Binary(t), variants)
	})
	t.Run("a kill -9 between runs 2 and 3 loses none of the summed deltas", func(t *testing.T) {
		testOTLPSDKKilled(t, prometheus3Binary(t), variants)
	})
	t.Run("the leader replica killed between runs 2 and 3, then run 3's answer lost and retried by the SDK: every replica holds the summed deltas", func(t *testing.T) {
		testOTLPSDKLeaderKilled(t, variants)
	})
	t.Run("a captured export replayed twice with curl changes nothing and names the overlap", func(t *testing.T) {
		testOTLPSDKReplay(t, variants)
	})
	t.Run("a job exporting while it works: its adjacent windows all add up, none taken for a retry", func(t *testing.T) {
		testOTLPSDKPeriodic(t, variants)
	})
	t.Run("a DELETE of the group resets the summed deltas", func(t *testing.T) {
		testOTLPSDKDelete(t, variants)
	})
	t.Run("a job that names its group in OTEL_EXPORTER_OTLP_METRICS_ENDPOINT lands in that group", func(t *testing.T) {
		testOTLPSDKGroupingPath(t, variants)
	})
}

func testOTLPSDKPeriodic(t *testing.T, variants []otlpVariant) {
	g := startGateway(t)
	rec := startOTLPRecorder(t, g.URL)
	for _, v := range variants {
		var ids []string
		for r := 1; r <= 3; r++ {
			ids = append(ids, v.runWith(t, rec.URL, otlpRunOptions{run: r, periodic: true}))
			exchanges := rec.take()
			if len(exchanges) < 2 {
				t.Fatalf("%s run %d sent %d exports, want one per interval and one at shutdown, 2 or more", v.service(), r, len(exchanges))
			}
			// A window that starts where the last one ended does not
			// overlap it: nothing is refused.
			for i, x := range exchanges {
				if err := x.requireAccepted(0); err != nil {
					t.Fatalf("%s run %d, export %d of %d: %v\nrequest: %s", v.service(), r, i+1, len(exchanges), err, x.describeRequest())
				}
			}
		}
		v.requireScrape(t, g.URL, otlpExpectAfter(v.temporality, 3), ids)
	}
}

func testOTLPSDKDelete(t *testing.T, variants []otlpVariant) {
	g := startGateway(t)
	for _, v := range variants {
		var ids []string
		for r := 1; r <= 2; r++ {
			ids = append(ids, v.run(t, g.URL, r))
		}
		v.requireScrape(t, g.URL, otlpExpectAfter(v.temporality, 2), ids)
		// The job label holds a '/': the path carries it in base64url.
		path := "/metrics/job@base64/" + base64.RawURLEncoding.EncodeToString([]byte(v.jobLabel()))
		mustStatus(t, http.StatusAccepted, http.MethodDelete, g.url(path), nil)
		eventually(t, waitTimeout, func() error {
			if err := v.checkScrape(g.URL, otlpExpectAfter(v.temporality, 2), nil); err == nil {
				return errorf("group %s still served after its DELETE", v.jobLabel())
			}
			return nil
		})
		// Run 3 alone: nothing of runs 1 and 2 is added to it.
		v.requireScrape(t, g.URL, otlpRunValues(3), append(ids, v.run(t, g.URL, 3)))
	}
}

func testOTLPSDKGroupingPath(t *testing.T, variants []otlpVariant) {
	g := startGateway(t)
	for _, v := range variants {
		// The signal's own endpoint is used as it is: no /v1/metrics added.
		key := lbl("job", "batch/"+v.service(), "instance", "db-1")
		endpoint := "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=" + g.URL + "/otlp/job@base64/" +
			base64.RawURLEncoding.EncodeToString([]byte(key["job"])) + "/instance/" + key["instance"] + "/v1/metrics"
		var ids []string
		for r := 1; r <= 3; r++ {
			ids = append(ids, v.run(t, g.URL, r, endpoint))
		}
		e := otlpExpectAfter(v.temporality, 3)
		eventually(t, waitTimeout, func() error { return checkOTLPGroup(g.URL, key, e, ids) })
		if err := v.checkScrape(g.URL, e, nil); err == nil || !strings.Contains(err.Error(), "series []") {
			t.Fatalf("the resource's job %s has a group too (%v), though the URL named the group", v.jobLabel(), err)
		}
	}
}

// otlpPrometheus starts Prometheus 3 scraping g with native histograms on.
func otlpPrometheus(t *testing.T, bin string, g *gateway) *prometheusServer {
	t.Helper()
	return startPrometheusBinary(t, bin, scrapeConfig(g, "scrape_native_histograms: true"))
}

func testOTLPSDKThreeRuns(t *testing.T, bin string, variants []otlpVariant) {
	g := startGateway(t)
	p := otlpPrometheus(t, bin, g)
	ids := map[string][]string{}
	created := map[string][]map[string]time.Time{}
	for r := 1; r <= 3; r++ {
		for _, v := range variants {
			ids[v.service()] = append(ids[v.service()], v.run(t, g.URL, r))
			ct, err := v.createdTimestamps(g.URL)
			if err != nil {
				t.Fatalf("%s after run %d: %v", v.service(), r, err)
			}
			created[v.service()] = append(created[v.service()], ct)
		}
	}
	for _, v := range variants {
		e := otlpExpectAfter(v.temporality, 3)
		v.requireScrape(t, g.URL, e, ids[v.service()])
		v.requirePrometheus(t, p, e)
		v.requireCreatedTimestamps(t, created[v.service()])
	}
	p.requireTargetHealthy(t)
}

// otlpCreatedFamilies are the families that carry a created timestamp (a
// point's start time): the counter and the two histograms.
var otlpCreatedFamilies = []string{"batch_items_processed_total", "batch_duration_seconds", "batch_payload_size_bytes"}

// createdTimestamps returns the created timestamps the gateway serves for
// the variant's otlpCreatedFamilies in a protobuf scrape.
func (v otlpVariant) createdTimestamps(baseURL string) (map[string]time.Time, error) {
	mfs, err := scrapeProtobuf(baseURL + "/metrics")
	if err != nil {
		return nil, err
	}
	cts := map[string]time.Time{}
	for _, name := range otlpCreatedFamilies {
		for _, m := range mfs[name].GetMetric() {
			if labelValue(m, "job") != v.jobLabel() {
				continue
			}
			ct := m.GetCounter().GetCreatedTimestamp()
			if m.Histogram != nil {
				ct = m.GetHistogram().GetCreatedTimestamp()
			}
			if ct == nil {
				return nil, fmt.Errorf("%s of job %s has no created timestamp", name, v.jobLabel())
			}
			cts[name] = ct.AsTime()
		}
		if _, ok := cts[name]; !ok {
			return nil, fmt.Errorf("no %s of job %s", name, v.jobLabel())
		}
	}
	return cts, nil
}

// requireCreatedTimestamps checks the created timestamps seen after each
// run. A cumulative series restarts with every run (a new process, a new
// start time), so its created timestamp moves forward with each run; the
// summed delta series never restarts, so it keeps the first run's: a
// Prometheus ingesting created timestamps would otherwise insert a zero
// below the sum and see a counter reset that never happened.
func (v otlpVariant) requireCreatedTimestamps(t *testing.T, perRun []map[string]time.Time) {
	t.Helper()
	for _, name := range otlpCreatedFamilies {
		for r := 1; r < len(perRun); r++ {
			prev, cur := perRun[r-1][name], perRun[r][name]
			switch {
			case v.temporality == "delta" && !cur.Equal(prev):
				t.Errorf("%s of job %s: created timestamp %v after run %d, %v after run %d; a summed delta series must keep its first start",
					name, v.jobLabel(), prev, r, cur, r+1)
			case v.temporality != "delta" && !cur.After(prev):
				t.Errorf("%s of job %s: created timestamp %v after run %d, %v after run %d; each run's process starts later",
					name, v.jobLabel(), prev, r, cur, r+1)
			}
		}
	}
}

func testOTLPSDKKilled(t *testing.T, bin string, variants []otlpVariant) {
	g := startGateway(t, "--persistence.file="+filepath.Join(t.TempDir(), "pushgate.journal"))
	p := otlpPrometheus(t, bin, g)
	ids := map[string][]string{}
	for r := 1; r <= 2; r++ {
		for _, v := range variants {
			ids[v.service()] = append(ids[v.service()], v.run(t, g.URL, r))
		}
	}
	if err := g.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill -9 the gateway: %v", err)
	}
	if _, ok := g.wait(30 * time.Second); !ok {
		t.Fatal("the gateway did not die of SIGKILL within 30s")
	}
	g = g.restart(t)
	for _, v := range variants {
		v.requireScrape(t, g.URL, otlpExpectAfter(v.temporality, 2), ids[v.service()])
		ids[v.service()] = append(ids[v.service()], v.run(t, g.URL, 3))
	}
	for _, v := range variants {
		e := otlpExpectAfter(v.temporality, 3)
		v.requireScrape(t, g.URL, e, ids[v.service()])
		v.requirePrometheus(t, p, e)
	}
}

func testOTLPSDKLeaderKilled(t *testing.T, variants []otlpVariant) {
	members := startEtcd(t, etcdServers(t)["3.7"], 3)
	rs := startReplicas(t, members, 3, fmt.Sprintf("--cluster.lease-ttl=%s", clusterLeaseTTL))
	leader := leaderOf(t, rs, waitTimeout)
	ids := map[string][]string{}
	for r := 1; r <= 2; r++ {
		for _, v := range variants {
			ids[v.service()] = append(ids[v.service()], v.run(t, leader.URL, r))
		}
	}
	converge(t, rs)
	killedAt := time.Now()
	leader.kill(t)
	// The first run 3 starts at once, while the cluster may have no leader
	// yet: the survivor waits for one, or answers 503 and the exporter
	// retries. A recorder in front of the survivor also loses the answer
	// to each run's first export (a 503 with Retry-After after the gateway
	// took it), so that every SDK retries, with its own retry settings, a
	// request the gateway has already summed: the retry must add nothing.
	survivor := live(rs)[0]
	rec := startOTLPRecorder(t, survivor.URL)
	for i, v := range variants {
		rec.loseNext(1)
		ids[v.service()] = append(ids[v.service()], v.run(t, rec.URL, 3))
		exchanges := rec.take()
		var statuses []string
		for _, x := range exchanges {
			s := fmt.Sprint(x.status)
			if x.lost {
				s += " (lost)"
			}
			statuses = append(statuses, s)
		}
		if i == 0 {
			t.Logf("the first run 3 through %s ended %s after the leader replica was killed; its exports were answered %v",
				survivor.Addr, time.Since(killedAt).Round(time.Millisecond), statuses)
		}
		last := exchanges[len(exchanges)-1]
		if len(exchanges) < 2 || last.lost {
			t.Fatalf("%s run 3: exports answered %v; the SDK did not retry the lost answer", v.service(), statuses)
		}
		if !bytes.Equal(last.body, exchanges[0].body) {
			t.Fatalf("%s run 3: the retry's body differs from the first export's\nfirst: %s\nretry: %s", v.service(), exchanges[0].describeRequest(), last.describeRequest())
		}
		if exchanges[0].status == http.StatusOK {
			// The gateway took the first export: the retry's delta points
			// overlap windows already summed.
			rejected := int64(0)
			if v.temporality == "delta" {
				rejected = 3
			}
			if err := last.requireAccepted(rejected); err != nil {
				t.Fatalf("%s run 3, the SDK's retry of an export the gateway took: %v\nrequest: %s", v.service(), err, last.describeRequest())
			}
		}
	}
	converge(t, rs)
	for _, r := range live(rs) {
		for _, v := range variants {
			v.requireScrape(t, r.URL, otlpExpectAfter(v.temporality, 3), ids[v.service()])
		}
	}
}

func testOTLPSDKReplay(t *testing.T, variants []otlpVariant) {
	curlBin := requireTool(t, "curl")
	g := startGateway(t)
	rec := startOTLPRecorder(t, g.URL)
	for _, v := range variants {
		// The delta variants compress their exports, as
		// OTEL_EXPORTER_OTLP_COMPRESSION=gzip makes every SDK do: the
		// replay then sends gzip too.
		var env []string
		if v.temporality == "delta" {
			env = append(env, "OTEL_EXPORTER_OTLP_COMPRESSION=gzip")
		}
		var ids []string
		for r := 1; r <= 2; r++ {
			ids = append(ids, v.run(t, rec.URL, r, env...))
		}
		exchanges := rec.take()
		if len(exchanges) != 2 {
			t.Fatalf("%s: %d requests recorded for 2 runs, want 2", v.service(), len(exchanges))
		}
		for i, x := range exchanges {
			if wantGzip := len(env) > 0; wantGzip != (x.contentEncoding == "gzip") {
				t.Fatalf("%s run %d: Content-Encoding %q with %v in the environment", v.service(), i+1, x.contentEncoding, env)
			}
			if err := x.requireAccepted(0); err != nil {
				t.Fatalf("%s run %d, as the SDK sent it: %v\nrequest: %s", v.service(), i+1, err, x.describeRequest())
			}
		}
		e := otlpExpectAfter(v.temporality, 2)
		v.requireScrape(t, g.URL, e, ids)
		before, err := scrapeProtobuf(g.url("/metrics"))
		if err != nil {
			t.Fatal(err)
		}
		// The delta variant's request carries three delta points (the
		// counter and the two histograms), whose windows are summed already.
		rejected := int64(0)
		if v.temporality == "delta" {
			rejected = 3
		}
		last := exchanges[1]
		for i := 1; i <= 2; i++ {
			x := curlReplay(t, curlBin, g.URL+last.path, last)
			if err := x.requireAccepted(rejected); err != nil {
				t.Fatalf("%s: replay %d of run 2's request with curl: %v\nrequest: %s", v.service(), i, err, last.describeRequest())
			}
		}
		v.requireScrape(t, g.URL, e, ids)
		after, err := scrapeProtobuf(g.url("/metrics"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"batch_items_processed_total", "batch_queue_depth", "batch_progress_ratio", "batch_duration_seconds", "batch_payload_size_bytes"} {
			b, a := jobSeries(before[name], v.jobLabel()), jobSeries(after[name], v.jobLabel())
			if b != a {
				t.Fatalf("%s: %s changed by the replays:\nbefore %s\nafter  %s\nrequest: %s", v.service(), name, b, a, last.describeRequest())
			}
		}
	}
}

// jobSeries renders the series of mf whose job is job, for comparisons.
func jobSeries(mf *dto.MetricFamily, job string) string {
	var out []string
	for _, m := range mf.GetMetric() {
		if labelValue(m, "job") == job {
			out = append(out, m.String())
		}
	}
	return strings.Join(out, "\n")
}
