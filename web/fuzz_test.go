package web

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pushgate/pushgate/store"
)

// requireOneLineError fails unless err's message is one non-empty line.
func requireOneLineError(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	if msg == "" || strings.ContainsAny(msg, "\r\n") {
		t.Fatalf("error is not one non-empty line: %q", msg)
	}
}

// protoContentType is the Content-Type of a delimited protobuf push.
const protoContentType = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"

// fuzzBaseline is pushed to job="base" before every round trip, so that a
// fuzzed push can clash with another group's types and names.
const fuzzBaseline = `# HELP shared_total A counter every group may share.
# TYPE shared_total counter
shared_total{a="1"} 3
# TYPE base_hist histogram
base_hist_bucket{le="1"} 1
base_hist_bucket{le="+Inf"} 2
base_hist_sum 3.5
base_hist_count 2
# TYPE g gauge
g{instance="i"} NaN
`

// FuzzPushScrape drives the real handler over a real store: a push accepted
// with 200 must show up in the next text scrape with exactly the pushed
// series and values (grouping labels added), and a rejected push must leave
// the scrape unchanged and never answer 5xx. Either way, every text and
// OpenMetrics scrape must stay valid UTF-8 (requireUTF8Scrapes: Prometheus
// refuses a whole scrape for one HELP text that is not, which expfmt lets
// through). Pushes go to /metrics/job/fuzz/instance/i, as text or
// delimited protobuf; the seeds put bytes that are not UTF-8 into every
// string field of both formats.
func FuzzPushScrape(f *testing.F) {
	for _, seed := range []string{
		"m 1\n",
		"m{a=\"x\"} NaN\nm{a=\"y\"} +Inf\nm{a=\"z\"} -Inf\n",
		"# HELP m A help text with \\\\ and \\n.\n# TYPE m gauge\nm -0\n",
		"# TYPE shared_total counter\nshared_total{a=\"1\"} 4\n",
		"# TYPE shared_total gauge\nshared_total 1\n",
		"# TYPE base_hist summary\nbase_hist 1\n",
		"# TYPE h histogram\nh_bucket{le=\"0.5\"} 1\nh_bucket{le=\"+Inf\"} 3\nh_sum 2\nh_count 3\n",
		"# TYPE s summary\ns{quantile=\"0.5\"} 1\ns{quantile=\"0.99\"} NaN\ns_sum 3\ns_count 9\n",
		"m{job=\"other\",instance=\"x\"} 1\n",
		"m 1 1000\n",
		"m{a=\"\\xff\"} 1\n",
		"push_time_seconds 1\n",
		"g 1\n",
		"m 1\nm 2\n",
		"m{a=\"1\",a=\"2\"} 1\n",
		"# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_count 1\n",
		"h_bucket{le=\"1\"} 1\n# TYPE h_bucket counter\n",
		"m 1e308\nn 4.9e-324\n",
		"# HELP m Requests hand\x83\xe8led.\n# TYPE m counter\nm 1\n",
		"# HELP shared_total \xff\n# TYPE shared_total counter\nshared_total{a=\"2\"} 1\n",
		"# HELP \"m\" \x83\xe8\n{\"m\"} 1\n",
		"",
	} {
		f.Add([]byte(seed), false)
	}
	for _, mfs := range [][]*dto.MetricFamily{
		{{Name: proto.String("m"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(math.NaN())}}}}},
		{{Name: proto.String("c_total"), Help: proto.String("h"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
			{Label: []*dto.LabelPair{{Name: proto.String("a"), Value: proto.String("1")}}, Counter: &dto.Counter{Value: proto.Float64(1)}},
			{Label: []*dto.LabelPair{{Name: proto.String("a"), Value: proto.String("2")}}, Counter: &dto.Counter{Value: proto.Float64(math.Inf(1))}},
		}}},
		{{Name: proto.String("h"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{Histogram: &dto.Histogram{
			SampleCount: proto.Uint64(3), SampleSum: proto.Float64(1.5),
			Bucket: []*dto.Bucket{{UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(2)}},
		}}}}},
		{{Name: proto.String("nh"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{Histogram: &dto.Histogram{
			SampleCount: proto.Uint64(4), SampleSum: proto.Float64(2), Schema: proto.Int32(3), ZeroThreshold: proto.Float64(1e-128),
			ZeroCount: proto.Uint64(1), PositiveSpan: []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(2)}}, PositiveDelta: []int64{1, 1},
		}}}}},
		{{Name: proto.String("s"), Type: dto.MetricType_SUMMARY.Enum(), Metric: []*dto.Metric{{Summary: &dto.Summary{
			SampleCount: proto.Uint64(2), SampleSum: proto.Float64(-1),
			Quantile: []*dto.Quantile{{Quantile: proto.Float64(0.5), Value: proto.Float64(math.NaN())}},
		}}}}},
		{{Name: proto.String("gh"), Type: dto.MetricType_GAUGE_HISTOGRAM.Enum(), Metric: []*dto.Metric{{Histogram: &dto.Histogram{
			SampleCount: proto.Uint64(1), SampleSum: proto.Float64(1),
			Bucket: []*dto.Bucket{{UpperBound: proto.Float64(math.Inf(1)), CumulativeCount: proto.Uint64(1)}},
		}}}}},
		{{Name: proto.String("u"), Metric: []*dto.Metric{{Untyped: &dto.Untyped{Value: proto.Float64(7)}}}}},
		{{Name: proto.String("m"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(1)}}}},
			{Name: proto.String("m"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{{Counter: &dto.Counter{Value: proto.Float64(2)}}}}},
		{{Name: proto.String("m"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Counter: &dto.Counter{Value: proto.Float64(1)}}}}},
		{{Name: proto.String("m"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{TimestampMs: proto.Int64(5), Gauge: &dto.Gauge{Value: proto.Float64(1)}}}}},
		{{Name: proto.String("m"), Help: proto.String("hand\x83\xe8led"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(1)}}}}},
		{{Name: proto.String("pb_bad_\x83name"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(1)}}}}},
		{{Name: proto.String("m_seconds"), Unit: proto.String("seconds\xff"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(1)}}}}},
		{{Name: proto.String("m"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{
			Label: []*dto.LabelPair{{Name: proto.String("a\xff"), Value: proto.String("\x83")}}, Gauge: &dto.Gauge{Value: proto.Float64(1)}}}}},
		{{Name: proto.String("c_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{{Counter: &dto.Counter{Value: proto.Float64(1), Exemplar: &dto.Exemplar{
			Value: proto.Float64(1), Label: []*dto.LabelPair{{Name: proto.String("trace_id"), Value: proto.String("\x83\xe8")}}}}}}}},
	} {
		f.Add(delimited(f, mfs...), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, protobuf bool) {
		h, own := newReservedHandler(t)
		if w := do(t, h, http.MethodPut, "/metrics/job/base", []byte(fuzzBaseline), nil); w.Code != http.StatusOK {
			t.Fatalf("baseline push: %d %s", w.Code, w.Body)
		}
		before := scrapePushed(t, h, own)

		var header map[string]string
		if protobuf {
			header = map[string]string{"Content-Type": protoContentType}
		}
		w := do(t, h, http.MethodPut, "/metrics/job/fuzz/instance/i", body, header)
		after := scrapePushed(t, h, own)
		requireUTF8Scrapes(t, h)
		switch {
		case w.Code == http.StatusOK:
		case w.Code >= 400 && w.Code < 500:
			requireOneLineError(t, fmt.Errorf("%s", strings.TrimSuffix(w.Body.String(), "\n")))
			if before != after {
				t.Fatalf("push rejected with %d %q changed the scrape:\nbefore:\n%s\nafter:\n%s", w.Code, w.Body, before, after)
			}
			return
		default:
			t.Fatalf("push answered %d %q", w.Code, w.Body)
		}

		pushed, err := oracleDecode(body, protobuf)
		if err != nil {
			t.Fatalf("push accepted, but expfmt rejects the body: %v", err)
		}
		want := expectedScrape(t, before, pushed, own)
		if after != want {
			t.Fatalf("push accepted; scrape differs\nwant:\n%s\ngot:\n%s", want, after)
		}
	})
}

// delimited encodes families as a delimited protobuf body.
func delimited(f *testing.F, mfs ...*dto.MetricFamily) []byte {
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := protodelim.MarshalTo(&b, mf); err != nil {
			f.Fatal(err)
		}
	}
	return b.Bytes()
}

// newReservedHandler returns a handler over an empty store whose own metric
// names are reserved, as cmd/pushgate sets it up, and the set of those names
// plus the push time families, which scrapePushed leaves out.
func newReservedHandler(t *testing.T) (*Handler, map[string]bool) {
	t.Helper()
	st := store.New(store.Options{})
	reg := prometheus.NewRegistry()
	h, err := New(st, reg, Options{MaxBodyBytes: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	builtin, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	builtin = append(builtin, OwnFamilies()...)
	st.Reserve(builtin)
	own := map[string]bool{store.PushTimeName: true, store.PushFailureTimeName: true}
	for _, mf := range builtin {
		own[mf.GetName()] = true
	}
	return h, own
}

// baselineNames are the families of fuzzBaseline. Their HELP in the merged
// scrape depends on the group order, so only other families' HELP texts are
// compared.
var baselineNames = map[string]bool{"shared_total": true, "base_hist": true, "g": true}

// scrapePushed scrapes the handler in the text format, parses it with expfmt
// and returns its pushed series (not the gateway's own families in own) as
// sorted canonical lines, plus a HELP line for each family not in the
// baseline.
func scrapePushed(t *testing.T, h http.Handler, own map[string]bool) string {
	t.Helper()
	w := do(t, h, http.MethodGet, "/metrics", nil, nil)
	if w.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", w.Code, w.Body)
	}
	mfs, err := parseTextBody(bytes.NewReader(w.Body.Bytes()))
	if err != nil {
		t.Fatalf("scrape does not parse: %v\n%s", err, w.Body)
	}
	var lines []string
	for name, mf := range mfs {
		if own[name] {
			continue
		}
		lines = append(lines, canonicalLines(mf)...)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// canonicalLines renders one line per series: name, type, sorted labels and
// the full value content (NaN as NaN, so that NaN equals NaN).
func canonicalLines(mf *dto.MetricFamily) []string {
	lines := make([]string, 0, len(mf.Metric)+1)
	if !baselineNames[mf.GetName()] {
		lines = append(lines, fmt.Sprintf("%s HELP %q", mf.GetName(), mf.GetHelp()))
	}
	for _, m := range mf.Metric {
		lps := make([]string, 0, len(m.Label))
		for _, lp := range m.Label {
			lps = append(lps, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
		}
		sort.Strings(lps)
		m2 := proto.Clone(m).(*dto.Metric)
		m2.Label = nil
		lines = append(lines, fmt.Sprintf("%s %s {%s} %s", mf.GetName(), mf.GetType(), strings.Join(lps, ","), m2.String()))
	}
	return lines
}

// oracleDecode decodes a push body independently of exposition: with
// expfmt's text parser, or frame by frame with protodelim, the last family
// of a name winning and families without metrics dropped.
func oracleDecode(body []byte, protobuf bool) (map[string]*dto.MetricFamily, error) {
	if !protobuf {
		mfs, err := parseTextBody(bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		maps.DeleteFunc(mfs, func(_ string, mf *dto.MetricFamily) bool { return len(mf.Metric) == 0 })
		return mfs, nil
	}
	out := map[string]*dto.MetricFamily{}
	r := bytes.NewReader(body)
	for r.Len() > 0 {
		mf := new(dto.MetricFamily)
		if err := (protodelim.UnmarshalOptions{MaxSize: -1}).UnmarshalFrom(r, mf); err != nil {
			return nil, err
		}
		out[mf.GetName()] = mf
	}
	maps.DeleteFunc(out, func(_ string, mf *dto.MetricFamily) bool { return len(mf.Metric) == 0 })
	return out, nil
}

// expectedScrape returns the canonical lines the scrape must hold after the
// pushed families were stored in {job="fuzz",instance="i"}: the lines
// before plus every pushed series with the grouping labels forced, passed
// through expfmt's text rendering and parsing as the scrape is.
func expectedScrape(t *testing.T, before string, pushed map[string]*dto.MetricFamily, own map[string]bool) string {
	t.Helper()
	var lines []string
	if before != "" {
		lines = strings.Split(before, "\n")
	}
	for _, mf := range pushed {
		for _, m := range mf.Metric {
			m.TimestampMs = nil
			kept := m.Label[:0]
			for _, lp := range m.Label {
				if n := lp.GetName(); n != "job" && n != "instance" {
					kept = append(kept, lp)
				}
			}
			m.Label = append(kept,
				&dto.LabelPair{Name: proto.String("instance"), Value: proto.String("i")},
				&dto.LabelPair{Name: proto.String("job"), Value: proto.String("fuzz")})
		}
		var b bytes.Buffer
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatalf("push accepted, but expfmt cannot render family %q: %v", mf.GetName(), err)
		}
		parsed, err := parseTextBody(&b)
		if err != nil {
			t.Fatalf("push accepted, but expfmt cannot parse its own rendering of %q: %v\n%s", mf.GetName(), err, b.String())
		}
		for name, p := range parsed {
			if !own[name] {
				lines = append(lines, canonicalLines(p)...)
			}
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// parseTextBody parses the text format 0.0.4 with legacy names, as expfmt
// does for Prometheus.
func parseTextBody(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	return p.TextToMetricFamilies(r)
}
