package exposition

import (
	"bytes"
	"math"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"
)

// batchJobFamilies builds the payload a typical batch job pushes at its end:
// 3 counters, 3 gauges, a 10-bucket histogram and a 3-quantile summary, 8
// families and 74 samples (about 6.9 KB as text), sorted by name.
func batchJobFamilies() []*dto.MetricFamily {
	stages := []string{"extract", "transform", "load", "verify", "publish"}
	seriesLabels := func(stage string) []*dto.LabelPair {
		return []*dto.LabelPair{
			{Name: proto.String("dataset"), Value: proto.String("orders")},
			{Name: proto.String("stage"), Value: proto.String(stage)},
		}
	}
	counter := func(name, help string, base float64) *dto.MetricFamily {
		mf := &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: dto.MetricType_COUNTER.Enum()}
		for i, st := range stages {
			mf.Metric = append(mf.Metric, &dto.Metric{Label: seriesLabels(st), Counter: &dto.Counter{Value: proto.Float64(base * float64(i+1))}})
		}
		return mf
	}
	gauge := func(name, help string, base float64) *dto.MetricFamily {
		mf := &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: dto.MetricType_GAUGE.Enum()}
		for i, st := range stages {
			mf.Metric = append(mf.Metric, &dto.Metric{Label: seriesLabels(st), Gauge: &dto.Gauge{Value: proto.Float64(base + 0.25*float64(i))}})
		}
		return mf
	}
	hist := &dto.MetricFamily{
		Name: proto.String("batch_job_record_duration_seconds"),
		Help: proto.String("Time spent processing one record, by processing step."),
		Type: dto.MetricType_HISTOGRAM.Enum(),
	}
	for s, step := range []string{"parse", "enrich", "write"} {
		h := &dto.Histogram{SampleCount: proto.Uint64(0), SampleSum: proto.Float64(0)}
		for i, ub := range []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5} {
			h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(ub), CumulativeCount: proto.Uint64(uint64((i + 1) * (s + 7) * 113))})
		}
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(math.Inf(1)), CumulativeCount: proto.Uint64(uint64(11 * (s + 7) * 113))})
		h.SampleCount = proto.Uint64(uint64(11 * (s + 7) * 113))
		h.SampleSum = proto.Float64(123.456 * float64(s+1))
		hist.Metric = append(hist.Metric, &dto.Metric{
			Label:     []*dto.LabelPair{{Name: proto.String("dataset"), Value: proto.String("orders")}, {Name: proto.String("step"), Value: proto.String(step)}},
			Histogram: h,
		})
	}
	summary := &dto.MetricFamily{
		Name: proto.String("batch_job_batch_size_records"),
		Help: proto.String("Number of records per processed batch."),
		Type: dto.MetricType_SUMMARY.Enum(),
		Metric: []*dto.Metric{{
			Label: []*dto.LabelPair{{Name: proto.String("dataset"), Value: proto.String("orders")}},
			Summary: &dto.Summary{
				SampleCount: proto.Uint64(4312),
				SampleSum:   proto.Float64(2158003),
				Quantile: []*dto.Quantile{
					{Quantile: proto.Float64(0.5), Value: proto.Float64(500)},
					{Quantile: proto.Float64(0.9), Value: proto.Float64(880)},
					{Quantile: proto.Float64(0.99), Value: proto.Float64(1000)},
				},
			},
		}},
	}
	return []*dto.MetricFamily{
		summary,
		gauge("batch_job_last_success_timestamp_seconds", "Unix time of the last successful completion of the stage.", 1.7384e9),
		gauge("batch_job_memory_peak_bytes", "Peak resident memory of the stage.", 5.36870912e8),
		hist,
		counter("batch_job_records_failed_total", "Records the stage rejected.", 17),
		counter("batch_job_records_processed_total", "Records the stage processed.", 120433),
		counter("batch_job_retries_total", "Retried operations of the stage.", 3),
		gauge("batch_job_stage_duration_seconds", "Wall-clock duration of the last run of the stage.", 12.5),
	}
}

// renderText renders families in format ct with expfmt's encoder.
func renderWithExpfmt(t testing.TB, families []*dto.MetricFamily, ct expfmt.Format) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, ct)
	for _, mf := range families {
		if err := enc.Encode(mf); err != nil {
			t.Fatalf("expfmt encode %q: %v", mf.GetName(), err)
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		if err := c.Close(); err != nil {
			t.Fatalf("expfmt close: %v", err)
		}
	}
	return buf.Bytes()
}

// batchJobText is batchJobFamilies in the text format 0.0.4.
func batchJobText(t testing.TB) []byte {
	t.Helper()
	return renderWithExpfmt(t, batchJobFamilies(), expfmt.FmtText)
}

// batchJobProtobuf is batchJobFamilies as delimited protobuf.
func batchJobProtobuf(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, mf := range batchJobFamilies() {
		if _, err := protodelim.MarshalTo(&buf, mf); err != nil {
			t.Fatalf("marshal %q: %v", mf.GetName(), err)
		}
	}
	return buf.Bytes()
}

// countSamples counts the samples of families as the text format shows them.
func countSamples(families []*dto.MetricFamily) int {
	n := 0
	for _, mf := range families {
		for _, m := range mf.Metric {
			switch {
			case m.Summary != nil:
				n += len(m.Summary.Quantile) + 2
			case m.Histogram != nil:
				n += len(m.Histogram.Bucket) + 2
				if len(m.Histogram.Bucket) == 0 || !math.IsInf(m.Histogram.Bucket[len(m.Histogram.Bucket)-1].GetUpperBound(), 1) {
					n++
				}
			default:
				n++
			}
		}
	}
	return n
}

func TestBatchJobPayloadHasTheAdvertisedShape(t *testing.T) {
	families := batchJobFamilies()
	text := batchJobText(t)
	if len(families) != 8 || countSamples(families) != 74 {
		t.Errorf("payload has %d families and %d samples, want 8 and 74", len(families), countSamples(families))
	}
	if len(text) < 6500 || len(text) > 7300 {
		t.Errorf("payload is %d bytes of text, want about 6.9 KB", len(text))
	}
	t.Logf("text %d bytes, protobuf %d bytes", len(text), len(batchJobProtobuf(t)))
}
