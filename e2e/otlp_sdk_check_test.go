package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

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

// otlpPrometheus starts Prometheus 3 scraping g with native histograms on.
func otlpPrometheus(t *testing.T, bin string, g *gateway) *prometheusServer {
	t.Helper()
	return startPrometheusBinary(t, bin, scrapeConfig(g, "scrape_native_histograms: true"))
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
