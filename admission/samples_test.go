package admission

import (
	"math"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// histogram is a classic histogram metric with the given upper bounds.
func histogram(bounds ...float64) *dto.Metric {
	h := &dto.Histogram{SampleCount: proto.Uint64(uint64(len(bounds))), SampleSum: proto.Float64(1)}
	for i, b := range bounds {
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(b), CumulativeCount: proto.Uint64(uint64(i + 1))})
	}
	return &dto.Metric{Histogram: h}
}

// summary is a summary metric with the given quantile ranks.
func summary(ranks ...float64) *dto.Metric {
	sm := &dto.Summary{SampleCount: proto.Uint64(1), SampleSum: proto.Float64(1)}
	for _, r := range ranks {
		sm.Quantile = append(sm.Quantile, &dto.Quantile{Quantile: proto.Float64(r), Value: proto.Float64(1)})
	}
	return &dto.Metric{Summary: sm}
}

func TestCheckSampleSeries(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	floatCounts := &dto.Metric{Histogram: &dto.Histogram{SampleCountFloat: proto.Float64(2.5), SampleSum: proto.Float64(1)}}
	tests := []struct {
		name    string
		typ     dto.MetricType
		m       *dto.Metric
		wantErr string // empty when the metric is accepted
	}{
		{"distinct increasing buckets are accepted", dto.MetricType_HISTOGRAM, histogram(1, 2, inf), ""},
		{"buckets out of order but distinct are accepted", dto.MetricType_HISTOGRAM, histogram(2, inf, 1), ""},
		{"one upper bound twice is refused", dto.MetricType_HISTOGRAM, histogram(1, 2, 1), `bucket le="1" appears twice`},
		{"+Inf twice is refused", dto.MetricType_GAUGE_HISTOGRAM, histogram(inf, 1, inf), `bucket le="+Inf" appears twice`},
		{"NaN twice is refused", dto.MetricType_HISTOGRAM, histogram(nan, 1, nan), `bucket le="NaN" appears twice`},
		{"float histograms are refused", dto.MetricType_HISTOGRAM, floatCounts, "float histograms"},
		{"distinct quantiles are accepted", dto.MetricType_SUMMARY, summary(0.5, 0.9, 0.99), ""},
		{"one quantile twice is refused", dto.MetricType_SUMMARY, summary(0.9, 0.5, 0.9), `quantile="0.9" appears twice`},
		{"other types have no sample series to check", dto.MetricType_GAUGE, &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(1)}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkSampleSeries(tt.typ, tt.m)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("checkSampleSeries: %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("checkSampleSeries: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestCheckSampleSeriesPutsBucketsInOrder(t *testing.T) {
	m := histogram(2, math.Inf(1), 1)
	if err := checkSampleSeries(dto.MetricType_HISTOGRAM, m); err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, b := range m.GetHistogram().GetBucket() {
		got = append(got, b.GetUpperBound())
	}
	if want := []float64{1, 2, math.Inf(1)}; !slices.Equal(got, want) {
		t.Errorf("bounds after the check = %v, want %v", got, want)
	}
}

func TestCheckReservedLabels(t *testing.T) {
	tests := []struct {
		name    string
		typ     dto.MetricType
		labels  []*dto.LabelPair
		wantErr bool
	}{
		{"a summary must not have a quantile label", dto.MetricType_SUMMARY, pairs("quantile", "1"), true},
		{"a histogram must not have an le label", dto.MetricType_HISTOGRAM, pairs("a", "1", "le", "1"), true},
		{"a gauge histogram must not have an le label", dto.MetricType_GAUGE_HISTOGRAM, pairs("le", "1"), true},
		{"a summary may have an le label", dto.MetricType_SUMMARY, pairs("le", "1"), false},
		{"a gauge may have both", dto.MetricType_GAUGE, pairs("le", "1", "quantile", "1"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkReservedLabels(tt.typ, tt.labels); (err != nil) != tt.wantErr {
				t.Errorf("checkReservedLabels = %v, want an error: %v", err, tt.wantErr)
			}
		})
	}
}
