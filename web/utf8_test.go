package web

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// utf8Scrapes are the scrapes a push with a string that is not UTF-8 must
// leave parsable: the text formats 0.0.4 and 1.0.0 and OpenMetrics, each as
// Prometheus asks for it, and the exact default Accept headers of
// Prometheus 2 and 3.
var utf8Scrapes = []struct{ name, accept string }{
	{"text 0.0.4", "text/plain;version=0.0.4"},
	{"text 1.0.0", "text/plain;version=1.0.0;escaping=allow-utf-8"},
	{"OpenMetrics 1.0.0", "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8"},
	{"Prometheus 2", "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"},
	{"Prometheus 3", "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.7,application/openmetrics-text;version=0.0.1;q=0.6,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.3"},
}

// requireUTF8Scrapes scrapes h in every utf8Scrapes format and fails unless
// each answer is 200 and valid UTF-8 throughout, and each text answer
// parses with expfmt. Prometheus' own parsers (model/textparse) refuse a
// whole scrape for one HELP line that is not UTF-8, which expfmt lets
// through; this module does not carry Prometheus, so the UTF-8 check stands
// in for them here, and e2e/oracle's TestInvalidUTF8LeavesEveryScrapeParsable
// parses the same scrapes of the binary with textparse.
func requireUTF8Scrapes(t *testing.T, h http.Handler) {
	t.Helper()
	for _, s := range utf8Scrapes {
		w := do(t, h, http.MethodGet, "/metrics", nil, map[string]string{"Accept": s.accept})
		if w.Code != http.StatusOK {
			t.Fatalf("%s scrape: %d %s", s.name, w.Code, w.Body)
		}
		if body := w.Body.Bytes(); !utf8.Valid(body) {
			i := bytes.IndexFunc(body, func(r rune) bool { return r == utf8.RuneError })
			t.Fatalf("%s scrape (%s) is not valid UTF-8 near byte %d: …%q…", s.name, w.Header().Get("Content-Type"), i, body[max(0, i-40):min(len(body), i+20)])
		}
		if ct := w.Header().Get("Content-Type"); strings.HasPrefix(ct, "text/plain") {
			p := expfmt.NewTextParser(model.UTF8Validation)
			if _, err := p.TextToMetricFamilies(bytes.NewReader(w.Body.Bytes())); err != nil {
				t.Fatalf("%s scrape (%s) does not parse: %v", s.name, ct, err)
			}
		}
	}
}

// rejectedBodies returns how many pushes h refused as malformed bodies,
// from its own pushgate_rejected_requests_total.
func rejectedBodies(t *testing.T, h http.Handler) int {
	t.Helper()
	w := do(t, h, http.MethodGet, "/metrics", nil, nil)
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(w.Body.Bytes()))
	if err != nil {
		t.Fatalf("scrape does not parse: %v", err)
	}
	for _, m := range fams["pushgate_rejected_requests_total"].GetMetric() {
		labels := map[string]string{}
		for _, lp := range m.GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
		if labels["handler"] == "push" && labels["reason"] == "body" {
			return int(m.GetCounter().GetValue())
		}
	}
	return 0
}

// utf8PB returns a delimited protobuf body of one gauge family named name
// with the given HELP text and unit, one series with label pairs, and,
// when exemplar is not nil, a counter family carrying that exemplar.
func utf8PB(t *testing.T, name, help, unit string, labels []string, exemplar []string) []byte {
	t.Helper()
	m := &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(1)}}
	for i := 0; i+1 < len(labels); i += 2 {
		m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(labels[i]), Value: proto.String(labels[i+1])})
	}
	mf := &dto.MetricFamily{Name: proto.String(name), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{m}}
	if help != "" {
		mf.Help = proto.String(help)
	}
	if unit != "" {
		mf.Unit = proto.String(unit)
	}
	fams := []*dto.MetricFamily{mf}
	if exemplar != nil {
		e := &dto.Exemplar{Value: proto.Float64(1), Timestamp: timestamppb.New(time.Unix(1700000000, 0))}
		for i := 0; i+1 < len(exemplar); i += 2 {
			e.Label = append(e.Label, &dto.LabelPair{Name: proto.String(exemplar[i]), Value: proto.String(exemplar[i+1])})
		}
		fams = append(fams, &dto.MetricFamily{Name: proto.String("c_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
			{Counter: &dto.Counter{Value: proto.Float64(1), Exemplar: e}},
		}})
	}
	var b bytes.Buffer
	for _, f := range fams {
		if _, err := protodelim.MarshalTo(&b, f); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func TestAPushWithInvalidUTF8IsRefusedAndChangesNothing(t *testing.T) {
	const bad = "\x83\xe8"
	pbHeader := map[string]string{"Content-Type": protoContentType}
	cases := []struct {
		name   string
		body   []byte
		header map[string]string
		// field is the part of the one-line reason that names the field.
		field string
	}{
		{"a text HELP text", []byte("# HELP x Requests hand" + bad + "led.\n# TYPE x counter\nx 2\n"), nil,
			`help text of metric "x" is not valid UTF-8`},
		{"a text HELP text with a quoted name", []byte("# HELP \"x\" Requests hand" + bad + "led.\n{\"x\"} 2\n"), nil,
			`help text of metric "x" is not valid UTF-8`},
		{"a text label value", []byte("x{a=\"" + bad + "\"} 2\n"), nil,
			`invalid label value "\x83\xe8"`},
		{"a protobuf HELP text", utf8PB(t, "x", "Requests hand"+bad+"led.", "", nil, nil), pbHeader,
			`help text of metric "x" is not valid UTF-8`},
		{"a protobuf metric name", utf8PB(t, "pb_bad_\x83name", "", "", nil, nil), pbHeader,
			`metric name "pb_bad_\x83name" is not valid UTF-8`},
		{"a protobuf unit", utf8PB(t, "y_seconds", "", "seconds"+bad, nil, nil), pbHeader,
			`unit of metric "y_seconds" is not valid UTF-8`},
		{"a protobuf label name", utf8PB(t, "y", "", "", []string{"a" + bad, "1"}, nil), pbHeader,
			`label name "a\x83\xe8" in metric "y" is not valid UTF-8`},
		{"a protobuf label value", utf8PB(t, "y", "", "", []string{"a", bad}, nil), pbHeader,
			`invalid label value "\x83\xe8" for label "a" in metric "y"`},
		{"a protobuf exemplar label name", utf8PB(t, "y", "", "", nil, []string{"trace" + bad, "1"}), pbHeader,
			`counter exemplar: label name "trace\x83\xe8" is not valid UTF-8`},
		{"a protobuf exemplar label value", utf8PB(t, "y", "", "", nil, []string{"trace_id", bad}), pbHeader,
			`counter exemplar: value of label trace_id is not valid UTF-8`},
	}
	for _, utf8Names := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s, UTF-8 names %v", tc.name, utf8Names), func(t *testing.T) {
				h, _ := newTestHandler(t, Options{UTF8Names: utf8Names})
				if w := do(t, h, http.MethodPut, "/metrics/job/a", []byte("# HELP x Requests handled.\n# TYPE x counter\nx 1\n"), nil); w.Code != http.StatusOK {
					t.Fatalf("setup push: %d %s", w.Code, w.Body)
				}
				groups := apiDo(h, http.MethodGet, "/api/v1/metrics").Body.String()
				rejected := rejectedBodies(t, h)
				// To the existing group and to an absent one (which a
				// rejection that reached the store would create), by PUT
				// and by POST.
				for _, target := range []string{"/metrics/job/a", "/metrics/job/new"} {
					for _, method := range []string{http.MethodPut, http.MethodPost} {
						w := do(t, h, method, target, tc.body, tc.header)
						reason := strings.TrimSuffix(w.Body.String(), "\n")
						if w.Code != http.StatusBadRequest || !strings.Contains(reason, tc.field) || strings.Contains(reason, "\n") {
							t.Fatalf("%s %s: %d %q, want 400 with %q on one line", method, target, w.Code, reason, tc.field)
						}
						rejected++
						if got := rejectedBodies(t, h); got != rejected {
							t.Fatalf("%s %s: pushgate_rejected_requests_total{reason=\"body\"} = %d, want %d", method, target, got, rejected)
						}
						if got := apiDo(h, http.MethodGet, "/api/v1/metrics").Body.String(); got != groups {
							t.Fatalf("%s %s changed the store:\nbefore %s\nafter  %s", method, target, groups, got)
						}
						requireUTF8Scrapes(t, h)
					}
				}
			})
		}
	}
}
