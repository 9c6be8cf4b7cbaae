package web

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// protoTextAccept is the Accept header asking for a protobuf text format.
func protoTextAccept(encoding, escaping string) map[string]string {
	a := "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=" + encoding
	if escaping != "" {
		a += "; escaping=" + escaping
	}
	return map[string]string{"Accept": a}
}

// parseProtoText reads a protobuf text body: messages separated by blank
// lines (encoding=text) or one per line (compact-text).
func parseProtoText(t *testing.T, body string, compact bool) map[string]*dto.MetricFamily {
	t.Helper()
	sep := "\n\n"
	if compact {
		sep = "\n"
	}
	out := map[string]*dto.MetricFamily{}
	for _, msg := range strings.Split(strings.TrimRight(body, "\n"), sep) {
		mf := &dto.MetricFamily{}
		if err := prototext.Unmarshal([]byte(msg), mf); err != nil {
			t.Fatalf("%q does not parse as a MetricFamily: %v", msg, err)
		}
		if out[mf.GetName()] != nil {
			t.Fatalf("family %s twice", mf.GetName())
		}
		out[mf.GetName()] = mf
	}
	return out
}

func TestTheProtobufTextFormatsAreServedAsTheReferenceServesThem(t *testing.T) {
	cases := []struct {
		name, encoding, escaping string
		wantName, wantLabel      string
		wantContentType          string
	}{
		{"text with the default escaping", "text", "", "a_b", "x_y",
			"application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=text; escaping=underscores"},
		{"compact text with the default escaping", "compact-text", "", "a_b", "x_y",
			"application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=compact-text; escaping=underscores"},
		{"text with UTF-8 names", "text", "allow-utf-8", "a.b", "x:y",
			"application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=text; escaping=allow-utf-8"},
		{"compact text with values escaping", "compact-text", "values", "U__a_2e_b", "U__x_3a_y",
			"application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=compact-text; escaping=values"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newTestHandler(t, Options{UTF8Names: true})
			for _, push := range []struct{ path, body string }{
				{"/metrics/job/j1", "# HELP m First.\n# TYPE m gauge\nm{a=\"1\"} 1\n{\"a.b\",\"x:y\"=\"v\"} 5\n"},
				{"/metrics/job/j2", "# HELP m Second.\n# TYPE m gauge\nm 2\n"},
			} {
				if w := do(t, h, http.MethodPut, push.path, []byte(push.body), nil); w.Code != http.StatusOK {
					t.Fatalf("push: %d %s", w.Code, w.Body)
				}
			}
			w := do(t, h, http.MethodGet, "/metrics", nil, protoTextAccept(tc.encoding, tc.escaping))
			if w.Code != http.StatusOK || w.Header().Get("Content-Type") != tc.wantContentType {
				t.Fatalf("%d, Content-Type %q; want 200, %q", w.Code, w.Header().Get("Content-Type"), tc.wantContentType)
			}
			fams := parseProtoText(t, w.Body.String(), tc.encoding == "compact-text")
			m := fams["m"]
			if m.GetHelp() != "First." || m.GetType() != dto.MetricType_GAUGE || len(m.GetMetric()) != 2 {
				t.Errorf("family m merged wrongly: %v", m)
			}
			ab := fams[tc.wantName]
			if ab == nil || len(ab.Metric) != 1 || labelNamed(ab.Metric[0], tc.wantLabel) != "v" || ab.Metric[0].GetUntyped().GetValue() != 5 {
				t.Errorf("family %s with label %s=\"v\" missing or wrong: %v", tc.wantName, tc.wantLabel, ab)
			}
			for _, name := range []string{"push_time_seconds", "push_failure_time_seconds", "pushgateway_http_requests_total"} {
				if fams[name] == nil {
					t.Errorf("family %s missing", name)
				}
			}
		})
	}
	h, _ := newTestHandler(t, Options{})
	for _, accept := range []string{"", "text/plain;version=0.0.4", protoTextAccept("delimited", "")["Accept"],
		protoTextAccept("delimited", "")["Accept"] + ";q=0.9, " + protoTextAccept("text", "")["Accept"] + ";q=0.5"} {
		w := do(t, h, http.MethodGet, "/metrics", nil, map[string]string{"Accept": accept})
		if strings.Contains(w.Header().Get("Content-Type"), "encoding=text") {
			t.Errorf("Accept %q got %q", accept, w.Header().Get("Content-Type"))
		}
	}
}

// labelNamed returns the value of m's label name ("" when absent).
func labelNamed(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

func TestTheProtobufTextFormatsEscapeExemplarLabelNames(t *testing.T) {
	h, _ := newTestHandler(t, Options{})
	mf := &dto.MetricFamily{Name: proto.String("c_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{{
		Counter: &dto.Counter{Value: proto.Float64(1), Exemplar: &dto.Exemplar{
			Label: []*dto.LabelPair{{Name: proto.String("trace.id"), Value: proto.String("abc")}}, Value: proto.Float64(0.5),
		}},
	}}}
	var body bytes.Buffer
	if _, err := protodelim.MarshalTo(&body, mf); err != nil {
		t.Fatal(err)
	}
	if w := do(t, h, http.MethodPut, "/metrics/job/j", body.Bytes(), map[string]string{"Content-Type": protoContentType}); w.Code != http.StatusOK {
		t.Fatalf("push: %d %s", w.Code, w.Body)
	}
	for escaping, want := range map[string]string{"underscores": "trace_id", "values": "U__trace_2e_id", "allow-utf-8": "trace.id"} {
		w := do(t, h, http.MethodGet, "/metrics", nil, protoTextAccept("compact-text", escaping))
		c := parseProtoText(t, w.Body.String(), true)["c_total"]
		if got := c.GetMetric()[0].GetCounter().GetExemplar().GetLabel()[0].GetName(); got != want {
			t.Errorf("escaping=%s: exemplar label %q, want %q", escaping, got, want)
		}
	}
}
