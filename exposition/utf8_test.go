package exposition

import (
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// invalidUTF8 is a byte sequence that is not UTF-8 (a continuation byte,
// then a lead byte without its continuations), the one found in a HELP
// text that made Prometheus refuse every scrape.
const invalidUTF8 = "\x83\xe8"

func TestDecodeTextRefusesInvalidUTF8InEveryString(t *testing.T) {
	bad := invalidUTF8
	tests := []struct {
		name      string
		body      string
		utf8      bool
		wantNames []string
		wantErr   string
	}{
		{
			name:    "a HELP text is refused, naming the field and the line",
			body:    "# HELP x Requests hand" + bad + "led.\n# TYPE x counter\nx 1\n",
			wantErr: `text format parsing error in line 1: help text of metric "x" is not valid UTF-8`,
		},
		{
			name:    "a HELP text is refused with UTF-8 names on",
			body:    "# HELP x a" + bad + "\nx 1\n",
			utf8:    true,
			wantErr: `help text of metric "x" is not valid UTF-8`,
		},
		{
			name:    "a HELP text after the samples is refused",
			body:    "x 1\n# HELP x a" + bad + "\n",
			wantErr: `text format parsing error in line 2: help text of metric "x" is not valid UTF-8`,
		},
		{
			name:    "a HELP text with escapes (the unescaping path) is refused",
			body:    "# HELP x a \\\\ b \\n " + bad + "\nx 1\n",
			wantErr: `help text of metric "x" is not valid UTF-8`,
		},
		{
			name:    "the HELP text of a summary's _count line names the summary",
			body:    "# TYPE s summary\n# HELP s_count " + bad + "\ns_count 1\n",
			wantErr: `help text of metric "s" is not valid UTF-8`,
		},
		{
			name:    "a HELP text in a body with quoted names (expfmt's path) is refused",
			body:    "# HELP \"a.b\" " + bad + "\n{\"a.b\"} 1\n",
			utf8:    true,
			wantErr: `help text of metric "a.b" is not valid UTF-8`,
		},
		{
			name:      "a HELP text of a family without samples is dropped with it",
			body:      "# HELP y " + bad + "\nx 1\n",
			wantNames: []string{"x"},
		},
		{
			name:      "the same on expfmt's path",
			body:      "# HELP y " + bad + "\n{\"a.b\"} 1\n",
			utf8:      true,
			wantNames: []string{"a.b"},
		},
		{
			name:    "a label value is refused",
			body:    "x{a=\"" + bad + "\"} 1\n",
			wantErr: `text format parsing error in line 1: invalid label value "\x83\xe8"`,
		},
		{
			name:    "a label value is refused on expfmt's path",
			body:    "{\"a.b\",a=\"" + bad + "\"} 1\n",
			utf8:    true,
			wantErr: `invalid label value "\x83\xe8"`,
		},
		{
			name:    "a quoted metric name is refused",
			body:    "{\"x" + bad + "\"} 1\n",
			utf8:    true,
			wantErr: `invalid metric name "x\x83\xe8"`,
		},
		{
			name:    "a quoted metric name in a HELP line is refused",
			body:    "# HELP \"x" + bad + "\" h\nx 1\n",
			utf8:    true,
			wantErr: `invalid metric name "x\x83\xe8"`,
		},
		{
			name:    "a quoted label name is refused",
			body:    "x{\"a" + bad + "\"=\"1\"} 1\n",
			utf8:    true,
			wantErr: `invalid label name "a\x83\xe8"`,
		},
		{
			name:    "a bare metric name cannot hold such bytes",
			body:    "pb_bad_\x83name 1\n",
			utf8:    true,
			wantErr: `text format parsing error in line 1:`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			families, err := decodeFamilies(strings.NewReader(tt.body), "text/plain; version=0.0.4", DecodeOptions{UTF8Names: tt.utf8})
			checkDecode(t, families, err, tt.wantNames, tt.wantErr)
			// The differential tests hold the two text parsers to the
			// same answers; these bodies are among the hard cases.
			checkMatchesExpfmt(t, tt.body, tt.utf8)
		})
	}
}

// withExemplar returns a counter family named c_total whose one metric has
// an exemplar with the given label pairs.
func withExemplar(pairs ...string) *dto.MetricFamily {
	e := &dto.Exemplar{Value: proto.Float64(1)}
	for i := 0; i+1 < len(pairs); i += 2 {
		e.Label = append(e.Label, &dto.LabelPair{Name: proto.String(pairs[i]), Value: proto.String(pairs[i+1])})
	}
	return &dto.MetricFamily{Name: proto.String("c_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
		{Counter: &dto.Counter{Value: proto.Float64(1), Exemplar: e}},
	}}
}

// histogramWithExemplar returns a histogram family named h with one classic
// bucket and one native exemplar; the exemplar given by bucket carries
// label pairs, the other a valid trace_id.
func histogramWithExemplar(bucket bool, pairs ...string) *dto.MetricFamily {
	bad := &dto.Exemplar{Value: proto.Float64(0.5), Timestamp: timestamppb.New(time.Unix(1700000000, 0))}
	for i := 0; i+1 < len(pairs); i += 2 {
		bad.Label = append(bad.Label, &dto.LabelPair{Name: proto.String(pairs[i]), Value: proto.String(pairs[i+1])})
	}
	good := &dto.Exemplar{Value: proto.Float64(0.5), Timestamp: timestamppb.New(time.Unix(1700000000, 0)),
		Label: []*dto.LabelPair{{Name: proto.String("trace_id"), Value: proto.String("abc")}}}
	h := &dto.Histogram{
		SampleCount: proto.Uint64(1), SampleSum: proto.Float64(0.5), Schema: proto.Int32(0), ZeroThreshold: proto.Float64(0),
		PositiveSpan: []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(1)}}, PositiveDelta: []int64{1},
		Bucket: []*dto.Bucket{{UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(1), Exemplar: good}},
	}
	if bucket {
		h.Bucket[0].Exemplar = bad
		h.Exemplars = []*dto.Exemplar{good}
	} else {
		h.Exemplars = []*dto.Exemplar{bad}
	}
	return &dto.MetricFamily{Name: proto.String("h"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{Histogram: h}}}
}

func TestDecodeProtobufRefusesInvalidUTF8InEveryString(t *testing.T) {
	bad := invalidUTF8
	withHelp := gaugeFamily("x", 1)
	withHelp.Help = proto.String("Requests hand" + bad + "led.")
	withUnit := gaugeFamily("x_seconds", 1)
	withUnit.Unit = proto.String("sec" + bad)
	// A valid HELP text and unit, to see that the checks pass them.
	fine := gaugeFamily("x_seconds", 1, "l", "ü")
	fine.Help, fine.Unit = proto.String("Ünïcode ✓"), proto.String("seconds")
	tests := []struct {
		name      string
		body      []byte
		utf8      bool
		wantNames []string
		wantErr   string
	}{
		{"a metric name is refused", delimited(t, gaugeFamily("pb_bad_\x83name", 1)), false, nil,
			`metric name "pb_bad_\x83name" is not valid UTF-8`},
		{"a metric name is refused with UTF-8 names on", delimited(t, gaugeFamily("pb_bad_\x83name", 1)), true, nil,
			`metric name "pb_bad_\x83name" is not valid UTF-8`},
		{"a HELP text is refused", delimited(t, withHelp), false, nil,
			`help text of metric "x" is not valid UTF-8`},
		{"a HELP text is refused with UTF-8 names on", delimited(t, withHelp), true, nil,
			`help text of metric "x" is not valid UTF-8`},
		{"a unit is refused", delimited(t, withUnit), true, nil,
			`unit of metric "x_seconds" is not valid UTF-8`},
		{"a label name is refused", delimited(t, gaugeFamily("x", 1, "a"+bad, "v")), false, nil,
			`label name "a\x83\xe8" in metric "x" is not valid UTF-8`},
		{"a label name is refused with UTF-8 names on", delimited(t, gaugeFamily("x", 1, "a"+bad, "v")), true, nil,
			`label name "a\x83\xe8" in metric "x" is not valid UTF-8`},
		{"a label value is refused", delimited(t, gaugeFamily("x", 1, "a", bad)), true, nil,
			`invalid label value "\x83\xe8" for label "a" in metric "x"`},
		{"a counter exemplar's label name is refused", delimited(t, withExemplar("trace"+bad, "1")), true, nil,
			`metric "c_total": counter exemplar: label name "trace\x83\xe8" is not valid UTF-8`},
		{"a counter exemplar's label value is refused", delimited(t, withExemplar("trace_id", bad)), false, nil,
			`metric "c_total": counter exemplar: value of label trace_id is not valid UTF-8`},
		{"a bucket exemplar's label value is refused", delimited(t, histogramWithExemplar(true, "trace_id", bad)), false, nil,
			`metric "h": exemplar of bucket le=1: value of label trace_id is not valid UTF-8`},
		{"a native histogram exemplar's label name is refused", delimited(t, histogramWithExemplar(false, bad, "1")), false, nil,
			`metric "h": native histogram exemplar: label name "\x83\xe8" is not valid UTF-8`},
		{"a refused family fails the whole body", delimited(t, gaugeFamily("a", 1), withHelp), false, nil,
			`help text of metric "x" is not valid UTF-8`},
		{"a family without metrics is dropped, whatever its strings", delimited(t, &dto.MetricFamily{Name: proto.String("e"), Help: proto.String(bad)}, gaugeFamily("f", 1)), false,
			[]string{"f"}, ""},
		{"valid UTF-8 in every field is accepted", delimited(t, fine, withExemplar("tracé", "ü"), histogramWithExemplar(true, "trace_id", "ü")), false,
			[]string{"c_total", "h", "x_seconds"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			families, err := decodeFamilies(strings.NewReader(string(tt.body)), protobufContentType, DecodeOptions{UTF8Names: tt.utf8})
			checkDecode(t, families, err, tt.wantNames, tt.wantErr)
			// The fast reader and proto.Unmarshal agree on these bodies.
			requireSameDecode(t, tt.body, DecodeOptions{UTF8Names: tt.utf8})
		})
	}
}
