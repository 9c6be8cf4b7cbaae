package oracle

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"
)

// These tests check the oracle itself, without a gateway: that each check
// fires on the answer it is about and stays quiet on a good one.

// Content types of canned answers.
const (
	ctText      = "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"
	ctTextUTF8  = "text/plain; version=0.0.4; charset=utf-8; escaping=allow-utf-8"
	ctOM        = "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores"
	ctProto     = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited; escaping=underscores"
	ctProtoUTF8 = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited; escaping=allow-utf-8"
)

// protoBody encodes families as a delimited protobuf answer.
func protoBody(t *testing.T, fams ...*dto.MetricFamily) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, mf := range fams {
		if _, err := protodelim.MarshalTo(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// gauge is a gauge family with one series of the given label pairs.
func gauge(name string, pairs ...string) *dto.MetricFamily {
	m := &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(1)}}
	for i := 0; i+1 < len(pairs); i += 2 {
		m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(pairs[i]), Value: proto.String(pairs[i+1])})
	}
	return &dto.MetricFamily{Name: proto.String(name), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{m}}
}

func TestScrapeChecksFlagWhatPrometheusWouldReject(t *testing.T) {
	cases := []struct {
		name        string
		variant     string
		contentType string
		encoding    string
		body        []byte
		// want is a substring of the one expected class; "" expects none.
		want string
	}{
		{
			name: "a clean text answer has no violation", variant: "text-0.0.4", contentType: ctText,
			body: []byte("# TYPE m gauge\nm{job=\"j\"} 1\n"),
		},
		{
			name: "a bucket written once as 1 and once as 1.0 is one series twice", variant: "text-0.0.4", contentType: ctText,
			body: []byte("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"1.0\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n"),
			want: "series twice (a bucket)",
		},
		{
			name: "m with an empty label beside m is one series twice", variant: "text-0.0.4", contentType: ctText,
			body: []byte("# TYPE m gauge\nm{a=\"\"} 1\nm 2\n"),
			want: "series twice",
		},
		{
			name: "OpenMetrics without # EOF does not parse", variant: "openmetrics-1.0.0", contentType: ctOM,
			body: []byte("# TYPE m gauge\nm 1\n"),
			want: "Prometheus 3 parser (textparse) in openmetrics",
		},
		{
			name: "an OpenMetrics family declared twice", variant: "openmetrics-1.0.0", contentType: ctOM,
			body: []byte("# TYPE m gauge\nm 1\n# TYPE m counter\nm_total 1\n# EOF\n"),
			want: "family twice",
		},
		{
			name: "a label name with a colon in a text answer does not parse", variant: "text-0.0.4", contentType: ctText,
			body: []byte("m{x:y=\"1\"} 1\n"),
			want: "Prometheus 3 parser (textparse) in text",
		},
		{
			name: "a UTF-8 label name in an escaped protobuf answer", variant: "protobuf", contentType: ctProto,
			body: protoBody(t, gauge("m", "a.b", "1")),
			want: "unescaped name (label)",
		},
		{
			name: "the same UTF-8 label name in an allow-utf-8 protobuf answer is fine", variant: canonicalVariant, contentType: ctProtoUTF8,
			body: protoBody(t, gauge("m", "a.b", "1")),
		},
		{
			name: "two label names that escape to one are a label twice", variant: "protobuf", contentType: ctProto,
			body: protoBody(t, gauge("m", "_", "1", "_", "2")),
			want: "label twice",
		},
		{
			name: "quoted UTF-8 names in a text answer that declares underscores", variant: "text-1.0.0-underscores", contentType: ctText,
			body: []byte("{\"a.b\"} 1\n"),
			want: "unescaped name (metric)",
		},
		{
			name: "a Content-Type the Accept header does not allow", variant: "text-1.0.0-allow-utf-8", contentType: ctText,
			body: []byte("m 1\n"),
			want: "content type",
		},
		{
			name: "Prometheus 3's Accept header may get text with allow-utf-8", variant: "prometheus-3", contentType: ctTextUTF8,
			body: []byte("{\"a.b\"} 1\n"), encoding: "gzip",
		},
		{
			name: "Prometheus 2 must not get allow-utf-8", variant: "prometheus-2", contentType: ctTextUTF8,
			body: []byte("m 1\n"), encoding: "gzip",
			want: "content type",
		},
		{
			name: "a gzip answer cut short", variant: "prometheus-2", contentType: ctText,
			body: gzipBytes([]byte("m 1\n"))[:12], encoding: "gzip",
			want: "gzip body",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			i := variantIndex(tc.variant)
			if i < 0 {
				t.Fatalf("no variant %q", tc.variant)
			}
			body := tc.body
			if tc.encoding == "gzip" && tc.want != "gzip body" {
				body = gzipBytes(body)
			}
			h := http.Header{"Content-Type": {tc.contentType}}
			if tc.encoding != "" {
				h.Set("Content-Encoding", tc.encoding)
			}
			r := &scrapeResult{v: variants[i], header: tc.contentType, body: body}
			r.analyze(response{status: 200, header: h, body: body})
			vs := classify(r.violations, map[string]bool{"text": true, "openmetrics": true, "protobuf": true})
			var got []string
			for _, v := range vs {
				got = append(got, v.class+": "+v.detail)
			}
			if tc.want == "" {
				if len(got) > 0 {
					t.Fatalf("violations %q, want none", got)
				}
				return
			}
			if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, tc.want) }) {
				t.Fatalf("violations %q, want one of class %q", got, tc.want)
			}
		})
	}
}

func TestEscapeLabelNameUsesTheLabelAlphabet(t *testing.T) {
	cases := []struct {
		name   string
		scheme model.EscapingScheme
		want   string
	}{
		{"x:y", model.UnderscoreEscaping, "x_y"},
		{"x:y", model.DotsEscaping, "x__y"},
		{"x:y", model.ValueEncodingEscaping, "U__x_3a_y"},
		{"x:y", model.NoEscaping, "x:y"},
		{"a.b", model.DotsEscaping, "a_dot_b"},
		{"a.b_c", model.DotsEscaping, "a_dot_b__c"},
		{"ü", model.UnderscoreEscaping, "_"},
		{"😀", model.ValueEncodingEscaping, "U___1f600_"},
		{"1x", model.UnderscoreEscaping, "_x"},
		{"a_b", model.DotsEscaping, "a_b"},
		{"a_b", model.ValueEncodingEscaping, "a_b"},
	}
	for _, tc := range cases {
		if got := escapeLabelName(tc.name, tc.scheme); got != tc.want {
			t.Errorf("escapeLabelName(%q, %s) = %q, want %q", tc.name, tc.scheme, got, tc.want)
		}
	}
	if got := valueEncodeLabelName("x:y"); got != "U__x_3a_y" {
		t.Errorf("valueEncodeLabelName(x:y) = %q", got)
	}
	if got := model.UnescapeName(valueEncodeLabelName("a.b_c"), model.ValueEncodingEscaping); got != "a.b_c" {
		t.Errorf("U__ encoding does not round-trip a.b_c: %q", got)
	}
}

func TestExpectedOpenMetricsNamesOfACounterWithoutTotal(t *testing.T) {
	c := &dto.MetricFamily{Name: proto.String("c"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{{
		Label:   []*dto.LabelPair{{Name: proto.String("job"), Value: proto.String("j")}},
		Counter: &dto.Counter{Value: proto.Float64(2)},
	}}}
	for _, tc := range []struct {
		omNames bool
		want    string
	}{{false, `c{job="j"}`}, {true, `c_total{job="j"}`}} {
		got, err := expectedSamples([]*dto.MetricFamily{c}, view{"openmetrics", model.UnderscoreEscaping}, tc.omNames)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].id != tc.want {
			t.Errorf("omNames=%v: %v, want %s", tc.omNames, got, tc.want)
		}
	}
}

func TestModelKeepsGroupingLabelsOverBodyLabels(t *testing.T) {
	mf := gauge("m", "job", "body", "a", "x", "b", "y")
	got := sanitize(mf, map[string]string{"job": "j", "a": ""})
	var pairs []string
	for _, lp := range got.Metric[0].Label {
		pairs = append(pairs, lp.GetName()+"="+lp.GetValue())
	}
	if want := "a= b=y instance= job=j"; strings.Join(pairs, " ") != want {
		t.Fatalf("labels %q, want %q", strings.Join(pairs, " "), want)
	}
}

func TestShrinkFindsTheOpsThatMatter(t *testing.T) {
	var ops []*op
	for i := 0; i < 20; i++ {
		o := &op{kind: opPush, method: "PUT", path: "/metrics/job/j" + string(rune('a'+i)), proto: true,
			families: []*dto.MetricFamily{gauge("x"), gauge("y"), gauge("z")}}
		o.encode()
		ops = append(ops, o)
	}
	// The "violation" needs ops c and q, and family y in q.
	test := func(cand []*op) (violation, bool) {
		var c, q bool
		for _, o := range cand {
			c = c || strings.HasSuffix(o.path, "/jc")
			q = q || strings.HasSuffix(o.path, "/jq") && slices.ContainsFunc(o.families, func(mf *dto.MetricFamily) bool { return mf.GetName() == "y" })
		}
		return violation{class: "test"}, c && q
	}
	res := shrink(ops, test, shrinkBudget{deadline: time.Now().Add(time.Minute), maxTrials: 1000})
	if !res.complete || len(res.ops) != 2 {
		t.Fatalf("shrunk to %d ops (complete %v):\n%s", len(res.ops), res.complete, describeOps(res.ops))
	}
	if got := res.ops[1].families; len(got) != 1 || got[0].GetName() != "y" {
		t.Fatalf("second op keeps families %v, want only y", got)
	}
}
