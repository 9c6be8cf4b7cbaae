package exposition

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
)

// nameCases are metric and label names that need quoting or escaping, one
// kind of character each, beside legacy ones.
var nameCases = []struct {
	name          string
	metric, label string
}{
	{"legacy names", "m", "a_b"},
	{"a colon in a label name", "m", "x:y"},
	{"a colon leading a label name", "m", ":x"},
	{"a colon in the metric name and a label name", "ns:m", "ns:l"},
	{"a dot in both names", "m.x", "a.b"},
	{"non-ASCII letters in both names", "mü", "ü"},
	{"an emoji label name", "m", "😀"},
	{"leading digits in both names", "0m", "0a"},
	{"a space and a quote in both names", "m x\"", "l y\""},
}

// decodeResponse decodes a whole response in f with expfmt's decoder for
// f's content type, which validates names with the legacy rules unless f
// asks for escaping=allow-utf-8.
func decodeResponse(t *testing.T, body []byte, f Format) []*dto.MetricFamily {
	t.Helper()
	dec := expfmt.NewDecoder(bytes.NewReader(body), expfmt.Format(f.ContentType()))
	var out []*dto.MetricFamily
	for range 10 {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: expfmt cannot parse the response: %v\n%q", f, err, body)
		}
		out = append(out, mf)
	}
	t.Fatalf("%s: more than 10 families in %q", f, body)
	return nil
}

func TestNamesAreWrittenValidly(t *testing.T) {
	for _, tc := range nameCases {
		for _, f := range allFormats() {
			t.Run(fmt.Sprintf("%s in %s", tc.name, f.ContentType()), func(t *testing.T) {
				// 1.5: a value the text format and OpenMetrics spell
				// alike, so that expfmt's text parser reads both.
				mf := withHelp(gaugeFamily(tc.metric, 1.5, tc.label, "v", "job", "j"), "Help.")
				body, err := assemble([]*dto.MetricFamily{mf}, f)
				if err != nil {
					t.Fatal(err)
				}
				got := decodeResponse(t, body, f)
				if len(got) != 1 || len(got[0].Metric) != 1 {
					t.Fatalf("parsed %v from %q, want one family of one metric", got, body)
				}
				wantName := EscapeMetricName(tc.metric, f.scheme)
				wantLabel := EscapeLabelName(tc.label, f.scheme)
				if got[0].GetName() != wantName {
					t.Errorf("family name %q, want %q", got[0].GetName(), wantName)
				}
				labels := map[string]string{}
				for _, lp := range got[0].Metric[0].Label {
					labels[lp.GetName()] = lp.GetValue()
					if f.scheme != model.NoEscaping && !model.LegacyValidation.IsValidLabelName(lp.GetName()) {
						t.Errorf("label name %q is not a legacy label name under %s", lp.GetName(), f.scheme)
					}
				}
				if labels[wantLabel] != "v" || labels["job"] != "j" || len(labels) != 2 {
					t.Errorf("labels %v, want %s=v and job=j", labels, wantLabel)
				}
				if f.scheme == model.ValueEncodingEscaping && !legacyLabelName(tc.label) {
					if back := model.UnescapeName(wantLabel, model.ValueEncodingEscaping); back != tc.label {
						t.Errorf("label name %q unescapes to %q, want %q", wantLabel, back, tc.label)
					}
				}
				if f.Encoding() != EncodingProtobuf && f.scheme == model.NoEscaping && !legacyLabelName(tc.label) {
					quoted := fmt.Sprintf("%q=\"v\"", tc.label)
					if !bytes.Contains(body, []byte(quoted)) {
						t.Errorf("response %q does not hold the quoted label %s", body, quoted)
					}
				}
			})
		}
	}
}

func TestAColonLabelNameIsQuotedOrEscapedInEverySampleLine(t *testing.T) {
	mf := &dto.MetricFamily{Name: proto.String("h"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{
		Label: []*dto.LabelPair{{Name: proto.String("x:y"), Value: proto.String("1")}},
		Histogram: &dto.Histogram{SampleCount: proto.Uint64(2), SampleSum: proto.Float64(3), Bucket: []*dto.Bucket{
			{UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(1)},
		}},
	}}}
	tests := []struct {
		accept string
		want   string
	}{
		{"text/plain;version=0.0.4;escaping=allow-utf-8",
			"h_bucket{\"x:y\"=\"1\",le=\"1\"} 1\nh_bucket{\"x:y\"=\"1\",le=\"+Inf\"} 2\nh_sum{\"x:y\"=\"1\"} 3\nh_count{\"x:y\"=\"1\"} 2\n"},
		{"text/plain;version=0.0.4;escaping=underscores",
			"h_bucket{x_y=\"1\",le=\"1\"} 1\nh_bucket{x_y=\"1\",le=\"+Inf\"} 2\nh_sum{x_y=\"1\"} 3\nh_count{x_y=\"1\"} 2\n"},
		{"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8",
			"h_bucket{\"x:y\"=\"1\",le=\"1.0\"} 1\nh_bucket{\"x:y\"=\"1\",le=\"+Inf\"} 2\nh_sum{\"x:y\"=\"1\"} 3.0\nh_count{\"x:y\"=\"1\"} 2\n"},
		{"application/openmetrics-text;version=1.0.0;escaping=dots",
			"h_bucket{x__y=\"1\",le=\"1.0\"} 1\nh_bucket{x__y=\"1\",le=\"+Inf\"} 2\nh_sum{x__y=\"1\"} 3.0\nh_count{x__y=\"1\"} 2\n"},
		{"application/openmetrics-text;version=1.0.0;escaping=values",
			"h_bucket{U__x_3a_y=\"1\",le=\"1.0\"} 1\nh_bucket{U__x_3a_y=\"1\",le=\"+Inf\"} 2\nh_sum{U__x_3a_y=\"1\"} 3.0\nh_count{U__x_3a_y=\"1\"} 2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.accept, func(t *testing.T) {
			got, err := AppendBody(nil, mf, Negotiate(map[string][]string{"Accept": {tt.accept}}))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("body\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestExemplarLabelNamesAreQuotedOrEscaped(t *testing.T) {
	tests := []struct {
		name, label string
		// wantOM is the sample line per escaping: allow-utf-8,
		// underscores, dots, values.
		wantOM [4]string
	}{
		{"a colon", "x:y", [4]string{
			`c_total 1.0 # {"x:y"="abc"} 0.5`, `c_total 1.0 # {x_y="abc"} 0.5`,
			`c_total 1.0 # {x__y="abc"} 0.5`, `c_total 1.0 # {U__x_3a_y="abc"} 0.5`}},
		{"a dot", "trace.id", [4]string{
			`c_total 1.0 # {"trace.id"="abc"} 0.5`, `c_total 1.0 # {trace_id="abc"} 0.5`,
			`c_total 1.0 # {trace_dot_id="abc"} 0.5`, `c_total 1.0 # {U__trace_2e_id="abc"} 0.5`}},
		{"a legacy name", "trace_id", [4]string{
			`c_total 1.0 # {trace_id="abc"} 0.5`, `c_total 1.0 # {trace_id="abc"} 0.5`,
			`c_total 1.0 # {trace_id="abc"} 0.5`, `c_total 1.0 # {trace_id="abc"} 0.5`}},
	}
	for _, tt := range tests {
		for i, esc := range []string{"allow-utf-8", "underscores", "dots", "values"} {
			t.Run(tt.name+" under "+esc, func(t *testing.T) {
				mf := exemplarCounter(tt.label)
				om := Negotiate(map[string][]string{"Accept": {"application/openmetrics-text;version=1.0.0;escaping=" + esc}})
				got, err := AppendBody(nil, mf, om)
				if err != nil {
					t.Fatal(err)
				}
				if want := tt.wantOM[i] + "\n"; string(got) != want {
					t.Errorf("OpenMetrics body %q, want %q", got, want)
				}
				pb := Negotiate(map[string][]string{"Accept": {"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;escaping=" + esc}})
				body, err := assemble([]*dto.MetricFamily{mf}, pb)
				if err != nil {
					t.Fatal(err)
				}
				fams := decodeResponse(t, body, pb)
				if len(fams) != 1 {
					t.Fatalf("decoded %d families", len(fams))
				}
				ex := fams[0].Metric[0].GetCounter().GetExemplar()
				if got, want := ex.GetLabel()[0].GetName(), EscapeLabelName(tt.label, om.scheme); got != want {
					t.Errorf("protobuf exemplar label %q, want %q", got, want)
				}
				if mf.Metric[0].Counter.Exemplar.Label[0].GetName() != tt.label {
					t.Errorf("escaping changed the family it was given")
				}
			})
		}
	}
}

func TestEscapingLeavesItsInputAlone(t *testing.T) {
	mf := withHelp(gaugeFamily("m.x", 1.5, "x:y", "v", "job", "j"), "Help.")
	want := proto.Clone(mf)
	for _, f := range allFormats() {
		if _, err := AppendBody(nil, mf, f); err != nil {
			t.Fatal(err)
		}
	}
	if !proto.Equal(mf, want) {
		t.Errorf("family changed to %v, want %v", mf, want)
	}
}

func TestAFloatHistogramIsRefusedInOpenMetricsOnly(t *testing.T) {
	mf := nativeHistogram("f", true)
	for _, f := range allFormats() {
		_, err := AppendBody(nil, mf, f)
		if got, want := err != nil, f.Encoding() == EncodingOpenMetrics; got != want {
			t.Errorf("%s: error %v, want an error: %v", f, err, want)
		}
		if err != nil && !strings.Contains(err.Error(), "float histogram") {
			t.Errorf("%s: error %q does not say why", f, err)
		}
	}
}
