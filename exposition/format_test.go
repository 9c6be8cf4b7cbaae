package exposition

import (
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

func TestNegotiate(t *testing.T) {
	tests := []struct {
		name   string
		accept string
		want   string
		enc    Encoding
	}{
		{
			name: "no Accept header gets text 0.0.4 with underscores",
			want: "text/plain; version=0.0.4; charset=utf-8; escaping=underscores",
			enc:  EncodingText,
		},
		{
			name:   "Prometheus 3's default Accept gets the text format with UTF-8 names, keeping le values as the reference serves them",
			accept: "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1",
			want:   "text/plain; version=0.0.4; charset=utf-8; escaping=allow-utf-8",
			enc:    EncodingText,
		},
		{
			name:   "Prometheus 2's default Accept gets the text format, so le=\"1\" is not renamed le=\"1.0\"",
			accept: "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
			want:   "text/plain; version=0.0.4; charset=utf-8; escaping=underscores",
			enc:    EncodingText,
		},
		{
			name:   "a scraper that accepts only OpenMetrics gets OpenMetrics 1.0.0",
			accept: "application/openmetrics-text;version=1.0.0",
			want:   "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores",
			enc:    EncodingOpenMetrics,
		},
		{
			name:   "a protobuf Accept gets delimited protobuf",
			accept: "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.1",
			want:   "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited; escaping=underscores",
			enc:    EncodingProtobuf,
		},
		{
			name:   "a protobuf Accept with escaping keeps the escaping",
			accept: "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;escaping=allow-utf-8",
			want:   "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited; escaping=allow-utf-8",
			enc:    EncodingProtobuf,
		},
		{
			name:   "OpenMetrics 0.0.1 is served as 0.0.1",
			accept: "application/openmetrics-text;version=0.0.1",
			want:   "application/openmetrics-text; version=0.0.1; charset=utf-8; escaping=underscores",
			enc:    EncodingOpenMetrics,
		},
		{
			name:   "text 1.0.0 gets text 0.0.4 with the requested escaping",
			accept: "text/plain;version=1.0.0;escaping=allow-utf-8",
			want:   "text/plain; version=0.0.4; charset=utf-8; escaping=allow-utf-8",
			enc:    EncodingText,
		},
		{
			name:   "text with dots escaping is honoured",
			accept: "text/plain;version=0.0.4;escaping=dots",
			want:   "text/plain; version=0.0.4; charset=utf-8; escaping=dots",
			enc:    EncodingText,
		},
		{
			name:   "text with values escaping is honoured",
			accept: "text/plain;version=0.0.4;escaping=values",
			want:   "text/plain; version=0.0.4; charset=utf-8; escaping=values",
			enc:    EncodingText,
		},
		{
			name:   "an unknown escaping is ignored",
			accept: "text/plain;version=0.0.4;escaping=bogus",
			want:   "text/plain; version=0.0.4; charset=utf-8; escaping=underscores",
			enc:    EncodingText,
		},
		{
			name:   "protobuf text encoding is served when asked for first",
			accept: "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text",
			want:   "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=text; escaping=underscores",
			enc:    EncodingProtoText,
		},
		{
			name:   "compact text is served with the escaping asked for",
			accept: "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=compact-text;escaping=values",
			want:   "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=compact-text; escaping=values",
			enc:    EncodingProtoCompactText,
		},
		{
			name:   "a protobuf text format asked for after text gets text",
			accept: "text/plain;version=0.0.4,application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text;q=0.5",
			want:   "text/plain; version=0.0.4; charset=utf-8; escaping=underscores",
			enc:    EncodingText,
		},
		{
			name:   "a browser's Accept gets text",
			accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
			want:   "text/plain; version=0.0.4; charset=utf-8; escaping=underscores",
			enc:    EncodingText,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.accept != "" {
				h.Set("Accept", tt.accept)
			}
			f := Negotiate(h)
			if f.ContentType() != tt.want {
				t.Errorf("ContentType() = %q, want %q", f.ContentType(), tt.want)
			}
			if f.Encoding() != tt.enc {
				t.Errorf("Encoding() = %v, want %v", f.Encoding(), tt.enc)
			}
		})
	}
}

func TestNewFormatDoesNotEscape(t *testing.T) {
	tests := []struct {
		enc  Encoding
		want string
	}{
		{EncodingText, "text/plain; version=0.0.4; charset=utf-8; escaping=allow-utf-8"},
		{EncodingOpenMetrics, "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=allow-utf-8"},
		{EncodingProtobuf, "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited; escaping=allow-utf-8"},
	}
	for _, tt := range tests {
		t.Run(tt.enc.String()+" is served with allow-utf-8", func(t *testing.T) {
			f := NewFormat(tt.enc)
			if f.ContentType() != tt.want || f.Encoding() != tt.enc {
				t.Errorf("NewFormat(%v) = %q (%v), want %q", tt.enc, f.ContentType(), f.Encoding(), tt.want)
			}
		})
	}
}

// exemplarCounter is a counter with one metric whose exemplar has one label
// named name.
func exemplarCounter(name string) *dto.MetricFamily {
	return &dto.MetricFamily{Name: proto.String("c_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{{
		Counter: &dto.Counter{Value: proto.Float64(1), Exemplar: &dto.Exemplar{
			Label: []*dto.LabelPair{{Name: proto.String(name), Value: proto.String("abc")}}, Value: proto.Float64(0.5),
		}},
	}}}
}

func TestLegacyNames(t *testing.T) {
	nameLabel := gaugeFamily("m", 1, "l", "v")
	nameLabel.Metric[0].Label = append(nameLabel.Metric[0].Label, &dto.LabelPair{Name: proto.String("__name__"), Value: proto.String("a.b")})
	tests := []struct {
		name string
		mf   *dto.MetricFamily
		want bool
	}{
		{"legacy names are plain", gaugeFamily("m", 1, "l", "v"), true},
		{"a UTF-8 metric name is not plain", gaugeFamily("my.metric", 1, "l", "v"), false},
		{"a UTF-8 label name is not plain", gaugeFamily("m", 1, "lab.el", "v"), false},
		{"a colon in a label name is not plain", gaugeFamily("m", 1, "a:b", "v"), false},
		{"a colon in a metric name is plain", gaugeFamily("ns:m", 1, "l", "v"), true},
		{"a UTF-8 __name__ label value is not plain", nameLabel, false},
		{"a UTF-8 exemplar label name is not plain", exemplarCounter("trace.id"), false},
		{"a legacy exemplar label name is plain", exemplarCounter("trace_id"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LegacyNames(tt.mf); got != tt.want {
				t.Errorf("LegacyNames = %v, want %v", got, tt.want)
			}
		})
	}
}
