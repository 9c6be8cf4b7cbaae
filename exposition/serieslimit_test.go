package exposition

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

func TestDecodeSeriesLimit(t *testing.T) {
	// Three series: two untyped ones and a histogram of four lines.
	text := "a 1\nb{x=\"y\"} 2\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n"
	// Two series, in the quoted syntax expfmt parses for us.
	quoted := "{\"a.b\"} 1\n{\"a.b\",x=\"y\"} 2\n"
	hist := &dto.MetricFamily{Name: proto.String("h"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{
		Histogram: &dto.Histogram{SampleCount: proto.Uint64(1), SampleSum: proto.Float64(1), Bucket: []*dto.Bucket{{UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(1)}}},
	}}}
	pb := delimited(t, gaugeFamily("a", 1), gaugeFamily("b", 2, "x", "y"), hist)
	tests := []struct {
		name        string
		body        []byte
		contentType string
		utf8        bool
		max         int
		wantErr     bool
	}{
		{"a text push of exactly the limit is accepted", []byte(text), "", false, 3, false},
		{"a text push one series over the limit is rejected", []byte(text), "", false, 2, true},
		{"a zero limit means no limit", []byte(text), "", false, 0, false},
		{"a quoted-name text push of exactly the limit is accepted", []byte(quoted), "", true, 2, false},
		{"a quoted-name text push over the limit is rejected", []byte(quoted), "", true, 1, true},
		{"a protobuf push of exactly the limit is accepted", pb, protobufContentType, false, 3, false},
		{"a protobuf push one series over the limit is rejected", pb, protobufContentType, false, 2, true},
		{"a protobuf push with a zero limit is accepted", pb, protobufContentType, false, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			families, err := decodeFamilies(bytes.NewReader(tt.body), tt.contentType, DecodeOptions{UTF8Names: tt.utf8, MaxSeries: tt.max})
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if len(families) == 0 {
					t.Fatal("Decode returned no families")
				}
				return
			}
			if !errors.Is(err, ErrTooManySeries) {
				t.Fatalf("Decode error = %v, want ErrTooManySeries", err)
			}
			if want := "push has more than " + string(rune('0'+tt.max)) + " series"; !strings.Contains(err.Error(), want) {
				t.Errorf("Decode error = %q, want it to name the limit: %q", err, want)
			}
		})
	}
}

// TestDecodeSeriesLimitStopsEarly shows the decoders give up at the first
// series over the limit: what follows it, here a syntax error, is never
// read.
func TestDecodeSeriesLimitStopsEarly(t *testing.T) {
	manyMetrics := &dto.MetricFamily{Name: proto.String("g"), Type: dto.MetricType_GAUGE.Enum()}
	for i := range 3 {
		manyMetrics.Metric = append(manyMetrics.Metric, gaugeFamily("g", float64(i), "i", string(rune('a'+i))).Metric[0])
	}
	pb := append(delimited(t, manyMetrics), 3, 0xff, 0xff, 0xff)
	tests := []struct {
		name        string
		body        []byte
		contentType string
	}{
		{"text", []byte("a 1\nb 2\nc 3\nthis is not a sample\n"), ""},
		{"protobuf", pb, protobufContentType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeFamilies(bytes.NewReader(tt.body), tt.contentType, DecodeOptions{MaxSeries: 2})
			if !errors.Is(err, ErrTooManySeries) {
				t.Fatalf("Decode error = %v, want ErrTooManySeries before the broken part", err)
			}
		})
	}
}
