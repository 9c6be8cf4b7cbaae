package e2e

import (
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// textFormat is the text exposition format a pusher can be switched to.
var textFormat = expfmt.NewFormat(expfmt.TypeTextPlain)

// newGauge registers a gauge with the given value in reg.
func newGauge(reg *prometheus.Registry, name, help string, v float64) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	g.Set(v)
	reg.MustRegister(g)
}

// TestGoClientPushAddDelete drives the gateway with client_golang's push
// package in both body formats: Push (PUT), Add (POST) and Delete, which
// client_golang only accepts when answered 202.
func TestGoClientPushAddDelete(t *testing.T) {
	g := startGateway(t)

	for _, tc := range []struct {
		name   string
		format bool // switch the pusher to the text format
	}{
		{name: "protobuf", format: false},
		{name: "text", format: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := "go_" + tc.name
			pusher := func(reg *prometheus.Registry) *push.Pusher {
				p := push.New(g.URL, job).Gatherer(reg).Grouping("instance", "i1")
				if tc.format {
					p = p.Format(textFormat)
				}
				return p
			}
			key := lbl("job", job, "instance", "i1")

			reg := prometheus.NewRegistry()
			newGauge(reg, "goc_"+tc.name+"_a", "Family a.", 1)
			newGauge(reg, "goc_"+tc.name+"_b", "Family b.", 2)
			if err := pusher(reg).Push(); err != nil {
				t.Fatalf("Push: %v", err)
			}
			mfs := scrape(t, g)
			mfs.requireValue(t, "goc_"+tc.name+"_a", key, 1)
			mfs.requireValue(t, "goc_"+tc.name+"_b", key, 2)
			if pt := sampleValue(mfs.require(t, "push_time_seconds", key)); pt <= 0 {
				t.Fatalf("push_time_seconds = %v, want > 0", pt)
			}
			if got := mfs["goc_"+tc.name+"_a"].GetHelp(); got != "Family a." {
				t.Fatalf("HELP = %q", got)
			}

			// Add replaces only the families in its body.
			reg = prometheus.NewRegistry()
			newGauge(reg, "goc_"+tc.name+"_b", "Family b.", 20)
			newGauge(reg, "goc_"+tc.name+"_c", "Family c.", 30)
			if err := pusher(reg).Add(); err != nil {
				t.Fatalf("Add: %v", err)
			}
			mfs = scrape(t, g)
			mfs.requireValue(t, "goc_"+tc.name+"_a", key, 1)
			mfs.requireValue(t, "goc_"+tc.name+"_b", key, 20)
			mfs.requireValue(t, "goc_"+tc.name+"_c", key, 30)

			// Push replaces the whole group.
			reg = prometheus.NewRegistry()
			newGauge(reg, "goc_"+tc.name+"_c", "Family c.", 31)
			if err := pusher(reg).Push(); err != nil {
				t.Fatalf("Push: %v", err)
			}
			mfs = scrape(t, g)
			mfs.requireAbsent(t, "goc_"+tc.name+"_a", key)
			mfs.requireAbsent(t, "goc_"+tc.name+"_b", key)
			mfs.requireValue(t, "goc_"+tc.name+"_c", key, 31)

			// Delete requires 202; deleting again (absent group) too.
			for i := 0; i < 2; i++ {
				if err := push.New(g.URL, job).Grouping("instance", "i1").Delete(); err != nil {
					t.Fatalf("Delete #%d: %v", i+1, err)
				}
			}
			eventually(t, waitTimeout, func() error {
				mfs := scrape(t, g)
				if s := mfs.series("push_time_seconds", key); len(s) > 0 {
					return errorf("group still present after Delete")
				}
				return nil
			})
			scrape(t, g).requireAbsent(t, "goc_"+tc.name+"_c", key)
		})
	}
}

// TestGoClientAddReplacesWholeFamily checks that a POST replaces a family as
// a whole: series of that family missing from the body disappear.
func TestGoClientAddReplacesWholeFamily(t *testing.T) {
	g := startGateway(t)
	vec := func(values map[string]float64) *prometheus.Registry {
		reg := prometheus.NewRegistry()
		gv := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "goc_vec", Help: "A vector."}, []string{"x"})
		for k, v := range values {
			gv.WithLabelValues(k).Set(v)
		}
		reg.MustRegister(gv)
		return reg
	}
	if err := push.New(g.URL, "vec").Gatherer(vec(map[string]float64{"1": 1, "2": 2})).Push(); err != nil {
		t.Fatal(err)
	}
	if err := push.New(g.URL, "vec").Gatherer(vec(map[string]float64{"3": 3})).Add(); err != nil {
		t.Fatal(err)
	}
	mfs := scrape(t, g)
	mfs.requireValue(t, "goc_vec", lbl("job", "vec", "instance", "", "x", "3"), 3)
	mfs.requireAbsent(t, "goc_vec", lbl("x", "1"))
	mfs.requireAbsent(t, "goc_vec", lbl("x", "2"))
}

// TestGoClientGroupingValues checks how grouping values travel: client_golang
// base64-encodes values with '/' (no padding), sends the empty value as
// "@base64/=", and query-escapes the rest, so a space arrives as '+', which a
// compatible server keeps literally (REFERENCE §1.2).
func TestGoClientGroupingValues(t *testing.T) {
	g := startGateway(t)
	for _, tc := range []struct {
		name      string
		job       string
		value     string // value given to Grouping("path", …)
		wantJob   string
		wantValue string // value stored
	}{
		{name: "slash in value", job: "gv1", value: "/var/tmp", wantJob: "gv1", wantValue: "/var/tmp"},
		{name: "slash in value needing padding", job: "gv2", value: "a/bc", wantJob: "gv2", wantValue: "a/bc"},
		{name: "empty value", job: "gv3", value: "", wantJob: "gv3", wantValue: ""},
		{name: "spaces become plus", job: "gv4", value: "value with spaces", wantJob: "gv4", wantValue: "value+with+spaces"},
		{name: "literal plus", job: "gv5", value: "a+b", wantJob: "gv5", wantValue: "a+b"},
		{name: "non-ASCII", job: "gv6", value: "grüße?&%", wantJob: "gv6", wantValue: "grüße?&%"},
		{name: "slash in job", job: "batch/nightly", value: "x", wantJob: "batch/nightly", wantValue: "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			newGauge(reg, "goc_grouping", "Grouping test.", 7)
			p := push.New(g.URL, tc.job).Gatherer(reg).Grouping("path", tc.value)
			if err := p.Push(); err != nil {
				t.Fatalf("Push: %v", err)
			}
			key := lbl("job", tc.wantJob, "path", tc.wantValue, "instance", "")
			scrape(t, g).requireValue(t, "goc_grouping", key, 7)
			if err := push.New(g.URL, tc.job).Grouping("path", tc.value).Delete(); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			eventually(t, waitTimeout, func() error {
				if scrape(t, g).find("goc_grouping", key) != nil {
					return errorf("still present after Delete")
				}
				return nil
			})
		})
	}
}

// TestGoClientRoundTrip pushes a counter, a gauge, a histogram and a summary
// in both formats and checks every scraped value against what the client
// gathered locally.
func TestGoClientRoundTrip(t *testing.T) {
	g := startGateway(t)
	for _, text := range []bool{false, true} {
		name := "protobuf"
		if text {
			name = "text"
		}
		t.Run(name, func(t *testing.T) {
			prefix := "rt_" + name + "_"
			reg := prometheus.NewRegistry()
			c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: prefix + "requests_total", Help: "Requests."}, []string{"code"})
			c.WithLabelValues("200").Add(41.5)
			c.WithLabelValues("500").Inc()
			ga := prometheus.NewGauge(prometheus.GaugeOpts{Name: prefix + "temperature", Help: "Temperature."})
			ga.Set(-3.25e-7)
			h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: prefix + "duration_seconds", Help: "Durations.", Buckets: []float64{0.1, 1, 5}})
			s := prometheus.NewSummary(prometheus.SummaryOpts{Name: prefix + "size_bytes", Help: "Sizes.", Objectives: map[float64]float64{0.5: 0.05, 0.9: 0.01, 0.99: 0.001}})
			for i := 1; i <= 20; i++ {
				h.Observe(float64(i) * 0.3)
				s.Observe(float64(i * 100))
			}
			reg.MustRegister(c, ga, h, s)
			want, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			p := push.New(g.URL, "roundtrip").Grouping("instance", name).Gatherer(reg)
			if text {
				p = p.Format(textFormat)
			}
			if err := p.Push(); err != nil {
				t.Fatalf("Push: %v", err)
			}
			got := scrape(t, g)
			for _, wmf := range want {
				gmf := got[wmf.GetName()]
				if gmf == nil {
					t.Fatalf("family %s missing from scrape", wmf.GetName())
				}
				if gmf.GetType() != wmf.GetType() || gmf.GetHelp() != wmf.GetHelp() {
					t.Fatalf("family %s: type %v help %q, want %v %q", wmf.GetName(), gmf.GetType(), gmf.GetHelp(), wmf.GetType(), wmf.GetHelp())
				}
				for _, wm := range wmf.GetMetric() {
					labels := lbl("job", "roundtrip", "instance", name)
					for _, lp := range wm.GetLabel() {
						labels[lp.GetName()] = lp.GetValue()
					}
					gm := got.require(t, wmf.GetName(), labels)
					if err := sameValues(wm, gm); err != nil {
						t.Fatalf("series %s%v: %v", wmf.GetName(), labels, err)
					}
				}
			}
		})
	}
}

// sameValues compares the values (not labels or timestamps) of two series.
func sameValues(want, got *dto.Metric) error {
	eq := func(what string, a, b float64) error {
		if a != b && !(math.IsNaN(a) && math.IsNaN(b)) {
			return errorf("%s = %v, want %v", what, b, a)
		}
		return nil
	}
	switch {
	case want.Counter != nil:
		return eq("counter", want.GetCounter().GetValue(), got.GetCounter().GetValue())
	case want.Gauge != nil:
		return eq("gauge", want.GetGauge().GetValue(), got.GetGauge().GetValue())
	case want.Histogram != nil:
		wh, gh := want.GetHistogram(), got.GetHistogram()
		if err := eq("sample count", float64(wh.GetSampleCount()), float64(gh.GetSampleCount())); err != nil {
			return err
		}
		if err := eq("sample sum", wh.GetSampleSum(), gh.GetSampleSum()); err != nil {
			return err
		}
		gb := map[float64]uint64{}
		for _, b := range gh.GetBucket() {
			gb[b.GetUpperBound()] = b.GetCumulativeCount()
		}
		for _, b := range wh.GetBucket() {
			if c, ok := gb[b.GetUpperBound()]; !ok || c != b.GetCumulativeCount() {
				return errorf("bucket le=%v = %v (present %v), want %v", b.GetUpperBound(), c, ok, b.GetCumulativeCount())
			}
		}
	case want.Summary != nil:
		ws, gs := want.GetSummary(), got.GetSummary()
		if err := eq("sample count", float64(ws.GetSampleCount()), float64(gs.GetSampleCount())); err != nil {
			return err
		}
		if err := eq("sample sum", ws.GetSampleSum(), gs.GetSampleSum()); err != nil {
			return err
		}
		gq := map[float64]float64{}
		for _, q := range gs.GetQuantile() {
			gq[q.GetQuantile()] = q.GetValue()
		}
		for _, q := range ws.GetQuantile() {
			if v, ok := gq[q.GetQuantile()]; !ok || v != q.GetValue() {
				return errorf("quantile %v = %v (present %v), want %v", q.GetQuantile(), v, ok, q.GetValue())
			}
		}
	}
	return nil
}

// TestGoClientRejectedPushReportsStatus checks that a push the gateway
// rejects surfaces as an error naming status 400 in client_golang.
func TestGoClientRejectedPushReportsStatus(t *testing.T) {
	g := startGateway(t)
	reg := prometheus.NewRegistry()
	newGauge(reg, "goc_conflict", "As a gauge.", 1)
	if err := push.New(g.URL, "conflict_a").Gatherer(reg).Push(); err != nil {
		t.Fatal(err)
	}
	reg = prometheus.NewRegistry()
	cnt := prometheus.NewCounter(prometheus.CounterOpts{Name: "goc_conflict", Help: "As a counter."})
	reg.MustRegister(cnt)
	err := push.New(g.URL, "conflict_b").Gatherer(reg).Push()
	if err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("pushing a counter over a gauge of the same name: err = %v, want status 400", err)
	}
	mfs := scrape(t, g)
	mfs.requireValue(t, "goc_conflict", lbl("job", "conflict_a", "instance", ""), 1)
	mfs.requireAbsent(t, "goc_conflict", lbl("job", "conflict_b"))
}
