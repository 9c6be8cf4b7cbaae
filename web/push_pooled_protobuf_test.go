package web

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// pooledProtobufBody is a protobuf push whose names, label values and HELP
// texts are built from prefix and value (strings of one length, so that
// every body puts its strings at the same offsets of the read buffer).
func pooledProtobufBody(t *testing.T, prefix, value string, gaugeType dto.MetricType) []byte {
	t.Helper()
	f := proto.Float64
	labels := []*dto.LabelPair{{Name: proto.String("branch"), Value: proto.String(value)}}
	families := []*dto.MetricFamily{
		{Name: proto.String(prefix + "_info"), Help: proto.String("Build of " + value + "."), Type: gaugeType.Enum(),
			Metric: []*dto.Metric{{Label: labels, Gauge: &dto.Gauge{Value: f(1)}, Counter: counterIf(gaugeType)}}},
		{Name: proto.String(prefix + "_seconds"), Type: dto.MetricType_SUMMARY.Enum(), Metric: []*dto.Metric{{
			Label: labels,
			Summary: &dto.Summary{SampleCount: proto.Uint64(4), SampleSum: f(2.5),
				Quantile:         []*dto.Quantile{{Quantile: f(0.5), Value: f(3)}},
				CreatedTimestamp: &timestamppb.Timestamp{Seconds: 1}},
		}}},
	}
	var buf bytes.Buffer
	for _, mf := range families {
		if _, err := protodelim.MarshalTo(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// counterIf gives a counter value to a family declared a counter.
func counterIf(typ dto.MetricType) *dto.Counter {
	if typ != dto.MetricType_COUNTER {
		return nil
	}
	return &dto.Counter{Value: proto.Float64(1)}
}

// TestProtobufPushKeepsNothingOfTheReleasedBody is
// TestPushKeepsNothingOfTheReleasedBody for protobuf pushes, whose strings
// alias the pooled read buffer: after other bodies of the same shape (and
// rejected ones) reused that buffer and the decoder's arenas, the first
// group must still scrape exactly as pushed.
func TestProtobufPushKeepsNothingOfTheReleasedBody(t *testing.T) {
	header := map[string]string{"Content-Type": "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"}
	want := []string{
		"# HELP pooled_info Build of main.",
		`pooled_info{branch="main",instance="",job="a"} 1`,
		`pooled_seconds{branch="main",instance="",job="a",quantile="0.5"} 3`,
		`pooled_seconds_sum{branch="main",instance="",job="a"} 2.5`,
		`pooled_seconds_count{branch="main",instance="",job="a"} 4`,
	}
	h, _ := newTestHandler(t, Options{TelemetryPath: "/metrics"})
	if w := do(t, h, http.MethodPut, "/metrics/job/a", pooledProtobufBody(t, "pooled", "main", dto.MetricType_GAUGE), header); w.Code != http.StatusOK {
		t.Fatalf("push: %d %s", w.Code, w.Body)
	}
	other := pooledProtobufBody(t, "qppmfe", "xxxx", dto.MetricType_GAUGE)
	// The same names as the first group with a conflicting type: rejected
	// by the consistency check after decoding.
	conflicting := pooledProtobufBody(t, "pooled", "zzzz", dto.MetricType_COUNTER)
	// A label value that is not UTF-8: rejected by the decoder.
	invalid := pooledProtobufBody(t, "pooled", "\xff\xff\xff\xff", dto.MetricType_GAUGE)
	for i := range 20 {
		if w := do(t, h, http.MethodPut, "/metrics/job/b", other, header); w.Code != http.StatusOK {
			t.Fatalf("push %d of other values: %d %s", i, w.Code, w.Body)
		}
		if w := do(t, h, http.MethodPost, "/metrics/job/c", conflicting, header); w.Code != http.StatusBadRequest {
			t.Fatalf("conflicting push %d: %d %s, want 400", i, w.Code, w.Body)
		}
		if w := do(t, h, http.MethodPost, "/metrics/job/c", invalid, header); w.Code != http.StatusBadRequest {
			t.Fatalf("invalid push %d: %d %s, want 400", i, w.Code, w.Body)
		}
	}
	text := scrapeText(t, h)
	for _, line := range want {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("the scrape lacks %q after the push's memory was reused:\n%s", line, text)
		}
	}
}
