package exposition

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"
)

const protobufContentType = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"

func TestIsProtobuf(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		want        bool
	}{
		{"the documented protobuf type is protobuf", protobufContentType, true},
		{"parameters in another order are protobuf", "application/vnd.google.protobuf; encoding=delimited; proto=io.prometheus.client.MetricFamily", true},
		{"parameters without spaces are protobuf", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", true},
		{"extra parameters are tolerated", protobufContentType + "; escaping=allow-utf-8", true},
		{"an upper-case media type is protobuf", "Application/Vnd.Google.Protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited", true},
		{"an empty content type is text", "", false},
		{"text/plain is text", "text/plain; version=0.0.4", false},
		{"openmetrics is text", "application/openmetrics-text; version=1.0.0; charset=utf-8", false},
		{"json is text", "application/json", false},
		{"protobuf text encoding is text", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=text", false},
		{"protobuf without encoding is text", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily", false},
		{"protobuf of another message is text", "application/vnd.google.protobuf; proto=other.Message; encoding=delimited", false},
		{"an unparsable protobuf type is text", "application/vnd.google.protobuf; proto", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsProtobuf(tt.contentType); got != tt.want {
				t.Errorf("IsProtobuf(%q) = %v, want %v", tt.contentType, got, tt.want)
			}
		})
	}
}

// familyNames lists the names of families, in order.
func familyNames(families []*dto.MetricFamily) []string {
	names := make([]string, len(families))
	for i, mf := range families {
		names[i] = mf.GetName()
	}
	return names
}

func TestDecodeText(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		utf8      bool
		wantNames []string
		wantErr   string
	}{
		{
			name:      "families come back sorted by name",
			body:      "zz 1\n# TYPE aa counter\naa 2\nmm{a=\"b\"} 3\n",
			wantNames: []string{"aa", "mm", "zz"},
		},
		{
			name:      "families with only HELP and TYPE are dropped",
			body:      "# HELP empty nothing here\n# TYPE empty gauge\nfull 1\n",
			wantNames: []string{"full"},
		},
		{
			name:      "EOF and unknown comments are ignored",
			body:      "# some comment\nx 1\n# EOF\n",
			wantNames: []string{"x"},
		},
		{
			name:      "an empty body has no families",
			body:      "",
			wantNames: []string{},
		},
		{
			name:      "quoted UTF-8 names are accepted with UTF-8 names on",
			body:      "{\"my.metric\",\"lab.el\"=\"v\"} 1\n",
			utf8:      true,
			wantNames: []string{"my.metric"},
		},
		{
			name:    "a missing final LF is an error",
			body:    "x 1",
			wantErr: "text format parsing error in line 1: unexpected end of input stream",
		},
		{
			name:    "CRLF line endings are an error",
			body:    "x 1\r\ny 2\r\n",
			wantErr: "text format parsing error in line 1:",
		},
		{
			name:    "an unquoted dotted metric name is a syntax error",
			body:    "a.b 1\n",
			wantErr: `text format parsing error in line 1: expected float as value, got ".b"`,
		},
		{
			name:    "a quoted UTF-8 metric name is an error in legacy mode",
			body:    "{\"a.b\"} 1\n",
			wantErr: `invalid metric name "a.b"`,
		},
		{
			name:    "a quoted UTF-8 label name is an error in legacy mode",
			body:    "m{\"l.x\"=\"v\"} 1\n",
			wantErr: `invalid label name "l.x"`,
		},
		{
			name:    "a second HELP line is an error",
			body:    "# HELP x one\n# HELP x two\nx 1\n",
			wantErr: `text format parsing error in line 2: second HELP line for metric name "x"`,
		},
		{
			name:    "a second TYPE line is an error",
			body:    "# TYPE x gauge\n# TYPE x gauge\nx 1\n",
			wantErr: `text format parsing error in line 2: second TYPE line for metric name "x"`,
		},
		{
			name:    "an unknown TYPE is an error",
			body:    "# TYPE x gaugy\nx 1\n",
			wantErr: `text format parsing error in line 1: unknown metric type "gaugy"`,
		},
		{
			name:    "a malformed value is an error",
			body:    "ok 1\nfine 2\nx y\n",
			wantErr: `text format parsing error in line 3: expected float as value, got "y"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			families, err := decodeFamilies(strings.NewReader(tt.body), "text/plain; version=0.0.4", DecodeOptions{UTF8Names: tt.utf8})
			checkDecode(t, families, err, tt.wantNames, tt.wantErr)
		})
	}
}

// checkDecode compares Decode's result with the wanted names or error
// prefix, and requires every error to be one line.
func checkDecode(t *testing.T, families []*dto.MetricFamily, err error, wantNames []string, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil {
			t.Fatalf("Decode succeeded with %v, want error %q", familyNames(families), wantErr)
		}
		if !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Decode error = %q, want it to contain %q", err, wantErr)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("Decode error %q spans several lines", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if got := familyNames(families); strings.Join(got, ",") != strings.Join(wantNames, ",") {
		t.Errorf("Decode families = %q, want %q", got, wantNames)
	}
	for _, mf := range families {
		if mf.Type == nil {
			t.Errorf("family %q has no Type", mf.GetName())
		}
	}
}

// delimited frames the given families as a protobuf push body.
func delimited(t *testing.T, families ...*dto.MetricFamily) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, mf := range families {
		if _, err := protodelim.MarshalTo(&buf, mf); err != nil {
			t.Fatalf("marshal: %v", err)
		}
	}
	return buf.Bytes()
}

// gaugeFamily is a one-metric gauge family with the given label pairs.
func gaugeFamily(name string, value float64, labels ...string) *dto.MetricFamily {
	m := &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(value)}}
	for i := 0; i+1 < len(labels); i += 2 {
		m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(labels[i]), Value: proto.String(labels[i+1])})
	}
	return &dto.MetricFamily{Name: proto.String(name), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{m}}
}

func TestDecodeProtobuf(t *testing.T) {
	valid := delimited(t, gaugeFamily("b", 1), gaugeFamily("a", 2))
	untypedNil := gaugeFamily("u", 1)
	untypedNil.Type = nil
	untypedNil.Metric[0].Gauge = nil
	untypedNil.Metric[0].Counter = &dto.Counter{Value: proto.Float64(1)}
	tests := []struct {
		name      string
		body      []byte
		utf8      bool
		wantNames []string
		wantErr   string
	}{
		{"valid messages come back sorted by name", valid, false, []string{"a", "b"}, ""},
		{"an empty body has no families", nil, false, []string{}, ""},
		{"a family without metrics is dropped", delimited(t, &dto.MetricFamily{Name: proto.String("e"), Type: dto.MetricType_GAUGE.Enum()}, gaugeFamily("f", 1)), false, []string{"f"}, ""},
		{"a family without a type is a counter", delimited(t, untypedNil), false, []string{"u"}, ""},
		{"a truncated frame is an error", valid[:len(valid)-3], false, nil, "protobuf: unexpected EOF in message 2"},
		{"a broken length varint is an error", []byte{0xff, 0xff}, false, nil, "protobuf: invalid length of message 1"},
		{"garbage inside a frame is an error", []byte{3, 0xff, 0xff, 0xff}, false, nil, "protobuf: message 1:"},
		{"a dotted metric name is an error in legacy mode", delimited(t, gaugeFamily("a.b", 1)), false, nil, `invalid metric name "a.b"`},
		{"a dotted metric name is accepted with UTF-8 names on", delimited(t, gaugeFamily("a.b", 1)), true, []string{"a.b"}, ""},
		{"a dotted label name is an error in legacy mode", delimited(t, gaugeFamily("m", 1, "l.x", "v")), false, nil, `invalid label name "l.x" in metric "m"`},
		{"a dotted label name is accepted with UTF-8 names on", delimited(t, gaugeFamily("m", 1, "l.x", "v")), true, []string{"m"}, ""},
		{"an empty metric name is an error", delimited(t, gaugeFamily("", 1)), true, nil, `invalid metric name ""`},
		{"a label value that is not UTF-8 is an error", delimited(t, gaugeFamily("m", 1, "l", "\xff")), false, nil, `invalid label value "\xff" for label "l" in metric "m"`},
		{"a __name__ label is an error", delimited(t, gaugeFamily("m", 1, "__name__", "x")), false, nil, `label name "__name__" is reserved`},
		{"a repeated label name is an error", delimited(t, gaugeFamily("m", 1, "l", "1", "l", "2")), false, nil, `duplicate label name "l" in metric "m"`},
		{"a metric without the value of its type is an error", delimited(t, &dto.MetricFamily{Name: proto.String("c"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(1)}}}}), false, nil, `metric "c": a metric of type counter must carry exactly one counter value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			families, err := decodeFamilies(bytes.NewReader(tt.body), protobufContentType, DecodeOptions{UTF8Names: tt.utf8})
			checkDecode(t, families, err, tt.wantNames, tt.wantErr)
		})
	}
}

func TestDecodeProtobufKeepsTheLastOfARepeatedFamily(t *testing.T) {
	body := delimited(t, gaugeFamily("pbd", 1), gaugeFamily("other", 5), gaugeFamily("pbd", 7))
	families, err := decodeFamilies(bytes.NewReader(body), protobufContentType, DecodeOptions{})
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if len(families) != 2 || families[1].GetName() != "pbd" {
		t.Fatalf("Decode families = %q, want [other pbd]", familyNames(families))
	}
	if got := families[1].Metric[0].GetGauge().GetValue(); got != 7 {
		t.Errorf("pbd = %v, want the last pushed value 7", got)
	}
}

func TestDecodeSizeLimit(t *testing.T) {
	text := []byte("x 1\ny 2\n")
	pb := delimited(t, gaugeFamily("x", 1))
	tests := []struct {
		name        string
		body        []byte
		contentType string
		max         int64
		wantTooBig  bool
	}{
		{"a text body of exactly the limit is accepted", text, "", int64(len(text)), false},
		{"a text body one byte over the limit is rejected", text, "", int64(len(text) - 1), true},
		{"a protobuf body of exactly the limit is accepted", pb, protobufContentType, int64(len(pb)), false},
		{"a protobuf body one byte over the limit is rejected", pb, protobufContentType, int64(len(pb) - 1), true},
		{"a zero limit means no limit", text, "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeFamilies(bytes.NewReader(tt.body), tt.contentType, DecodeOptions{MaxBytes: tt.max})
			if got := errors.Is(err, ErrTooLarge); got != tt.wantTooBig {
				t.Errorf("Decode error = %v, want ErrTooLarge: %v", err, tt.wantTooBig)
			}
			if !tt.wantTooBig && err != nil {
				t.Errorf("Decode: %v", err)
			}
		})
	}
}

func TestDecodeReadsTheBatchJobPayloadInBothFormats(t *testing.T) {
	want := batchJobFamilies()
	for _, tc := range []struct {
		name        string
		body        []byte
		contentType string
	}{
		{"text", batchJobText(t), ""},
		{"protobuf", batchJobProtobuf(t), protobufContentType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeFamilies(bytes.NewReader(tc.body), tc.contentType, DecodeOptions{})
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if len(got) != len(want) {
				t.Fatalf("Decode gave %d families, want %d", len(got), len(want))
			}
			for i := range want {
				if !proto.Equal(got[i], want[i]) {
					t.Errorf("family %d = %v, want %v", i, got[i], want[i])
				}
			}
		})
	}
}

// BenchmarkDecodeText decodes the batch-job payload with Decode (textParser)
// without releasing it, so that every decode starts from fresh memory, and,
// side by side, with expfmt's parser (the slow path).
func BenchmarkDecodeText(b *testing.B) {
	body := batchJobText(b)
	b.Run("parser=pushgate", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := decodeFamilies(bytes.NewReader(body), "text/plain; version=0.0.4", DecodeOptions{MaxBytes: 1 << 20}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parser=expfmt", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := decodeTextExpfmt(string(body), false, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDecodeProtobuf decodes the batch-job payload with Decode without
// releasing it, so that every decode starts from fresh memory
// (BenchmarkDecodePooledProtobuf releases).
func BenchmarkDecodeProtobuf(b *testing.B) {
	body := batchJobProtobuf(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := decodeFamilies(bytes.NewReader(body), protobufContentType, DecodeOptions{MaxBytes: 1 << 20}); err != nil {
			b.Fatal(err)
		}
	}
}

// decodeFamilies is Decode for a test that keeps the families: it never
// releases them, so they keep their memory.
func decodeFamilies(r io.Reader, contentType string, opts DecodeOptions) ([]*dto.MetricFamily, error) {
	d, err := Decode(r, contentType, opts)
	if err != nil {
		return nil, err
	}
	return d.Families, nil
}
