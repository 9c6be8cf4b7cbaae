// Package payload generates the realistic batch-job push that pushgate's
// benchmarks and load tool send: 8 families (3 counters, 3 gauges, a
// 10-bucket histogram and a 3-quantile summary), 74 samples, about 6.9 KB of
// text exposition format 0.0.4 with HELP and TYPE lines.
//
// The families and label sets are fixed, so every group pushes the same
// series and the pushes of different groups are mutually consistent; only
// the values change with the group index and the push sequence number, and
// they do so deterministically, so a benchmark is repeatable.
package payload

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// TextContentType is the Content-Type of a push rendered by Text.
const TextContentType = "text/plain; version=0.0.4"

// ProtobufContentType is the Content-Type of a push rendered by Protobuf:
// length-delimited MetricFamily messages, the format client_golang's pusher
// sends by default.
const ProtobufContentType = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"

// Job is the job label value the load tool pushes under.
const Job = "bench"

// family describes one metric family of the payload: its series are the
// label sets, each rendered with values drawn from the group and sequence.
type family struct {
	name   string
	help   string
	typ    dto.MetricType
	labels [][]labelPair
}

type labelPair struct{ name, value string }

// Histogram bucket bounds (seconds) and summary quantiles.
var (
	bucketBounds = [10]float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}
	quantiles    = [3]float64{0.5, 0.9, 0.99}
)

// families returns the payload's fixed structure. It is a function rather
// than a package variable so that the package holds no mutable state.
func families() []family {
	ls := func(kv ...string) []labelPair {
		out := make([]labelPair, 0, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, labelPair{kv[i], kv[i+1]})
		}
		return out
	}
	stages := []string{"extract", "load"}
	return []family{
		{
			name: "batch_records_processed_total",
			help: "Total number of records processed by the nightly batch job, by pipeline stage and source system.",
			typ:  dto.MetricType_COUNTER,
			labels: [][]labelPair{
				ls("stage", "extract", "source", "orders_db", "shard", "00"),
				ls("stage", "extract", "source", "orders_db", "shard", "01"),
				ls("stage", "extract", "source", "customers_db", "shard", "00"),
				ls("stage", "transform", "source", "orders_db", "shard", "00"),
				ls("stage", "transform", "source", "customers_db", "shard", "00"),
				ls("stage", "load", "source", "orders_db", "shard", "00"),
				ls("stage", "load", "source", "customers_db", "shard", "00"),
			},
		},
		{
			name: "batch_bytes_written_total",
			help: "Total number of bytes written by the batch job to each output sink, including retries.",
			typ:  dto.MetricType_COUNTER,
			labels: [][]labelPair{
				ls("sink", "warehouse", "table", "fact_orders"),
				ls("sink", "warehouse", "table", "dim_customers"),
				ls("sink", "object_store", "table", "orders_parquet"),
				ls("sink", "object_store", "table", "customers_parquet"),
				ls("sink", "search_index", "table", "orders"),
				ls("sink", "search_index", "table", "customers"),
			},
		},
		{
			name: "batch_errors_total",
			help: "Total number of errors encountered by the batch job, by pipeline stage and reason.",
			typ:  dto.MetricType_COUNTER,
			labels: [][]labelPair{
				ls("stage", "extract", "reason", "timeout"),
				ls("stage", "extract", "reason", "connection_reset"),
				ls("stage", "transform", "reason", "schema_mismatch"),
				ls("stage", "transform", "reason", "invalid_record"),
				ls("stage", "load", "reason", "timeout"),
				ls("stage", "load", "reason", "quota_exceeded"),
			},
		},
		{
			name: "batch_last_success_timestamp_seconds",
			help: "Unix time in seconds at which each stage of the batch job last completed successfully.",
			typ:  dto.MetricType_GAUGE,
			labels: [][]labelPair{
				ls("stage", "extract", "source", "orders_db"),
				ls("stage", "extract", "source", "customers_db"),
				ls("stage", "transform", "source", "orders_db"),
				ls("stage", "transform", "source", "customers_db"),
				ls("stage", "load", "source", "orders_db"),
				ls("stage", "load", "source", "customers_db"),
				ls("stage", "all", "source", "all"),
			},
		},
		{
			name: "batch_queue_depth",
			help: "Number of work items waiting in each internal queue of the batch job when it finished.",
			typ:  dto.MetricType_GAUGE,
			labels: [][]labelPair{
				ls("queue", "ingest", "priority", "high"),
				ls("queue", "ingest", "priority", "low"),
				ls("queue", "transform", "priority", "high"),
				ls("queue", "transform", "priority", "low"),
				ls("queue", "export", "priority", "high"),
				ls("queue", "export", "priority", "low"),
			},
		},
		{
			name: "batch_memory_bytes",
			help: "Peak memory used by the batch job in bytes, by memory area, sampled at the end of the run.",
			typ:  dto.MetricType_GAUGE,
			labels: [][]labelPair{
				ls("area", "heap", "kind", "in_use"),
				ls("area", "heap", "kind", "reserved"),
				ls("area", "stack", "kind", "in_use"),
				ls("area", "buffers", "kind", "in_use"),
				ls("area", "cache", "kind", "in_use"),
				ls("area", "total", "kind", "resident"),
			},
		},
		{
			name:   "batch_stage_duration_seconds",
			help:   "Time spent in each stage of the batch job, in seconds, measured from the first record read to the last record written.",
			typ:    dto.MetricType_HISTOGRAM,
			labels: [][]labelPair{ls("stage", stages[0], "region", "eu1"), ls("stage", stages[1], "region", "eu1")},
		},
		{
			name:   "batch_request_latency_seconds",
			help:   "Latency of requests the batch job made to upstream services, in seconds.",
			typ:    dto.MetricType_SUMMARY,
			labels: [][]labelPair{ls("endpoint", "orders_api", "region", "eu1"), ls("endpoint", "customers_api", "region", "eu1")},
		},
	}
}

// SampleCount returns the number of samples in one push: every counter and
// gauge series counts one, a histogram series counts its buckets (including
// +Inf) plus _sum and _count, a summary series its quantiles plus _sum and
// _count.
func SampleCount() int {
	n := 0
	for _, f := range families() {
		switch f.typ {
		case dto.MetricType_HISTOGRAM:
			n += len(f.labels) * (len(bucketBounds) + 1 + 2)
		case dto.MetricType_SUMMARY:
			n += len(f.labels) * (len(quantiles) + 2)
		default:
			n += len(f.labels)
		}
	}
	return n
}

// FamilyCount returns the number of metric families in one push.
func FamilyCount() int { return len(families()) }

// Text renders push seq of group groupIndex in text exposition format 0.0.4.
func Text(groupIndex, seq int) []byte {
	return AppendText(make([]byte, 0, 8<<10), groupIndex, seq)
}

// AppendText appends what Text renders to dst and returns the extended
// slice, so that a caller can reuse one buffer for many pushes.
func AppendText(dst []byte, groupIndex, seq int) []byte {
	for fi, f := range families() {
		dst = appendHeader(dst, f)
		dst = appendSeries(dst, f, fi, groupIndex, seq, "")
	}
	return dst
}

// Exposition renders what a Pushgateway-compatible gateway would expose after
// each of groups groups (instance i0 … i<groups-1>, job "bench") pushed once:
// one HELP and TYPE per family, the series of every group with its grouping
// labels, and the push_time_seconds and push_failure_time_seconds families.
// The load tool's null server serves it as the ceiling for scrape speed.
func Exposition(groups int) []byte {
	fams := families()
	dst := make([]byte, 0, groups*7600+4096)
	var extra []byte
	for fi, f := range fams {
		dst = appendHeader(dst, f)
		for g := range groups {
			extra = appendGroupLabels(extra[:0], g)
			dst = appendSeries(dst, f, fi, g, 0, string(extra))
		}
	}
	for _, name := range []string{"push_failure_time_seconds", "push_time_seconds"} {
		outcome := "succeeded"
		if name == "push_failure_time_seconds" {
			outcome = "failed"
		}
		dst = fmt.Appendf(dst, "# HELP %s Last Unix time when changing this group in the Pushgateway %s.\n# TYPE %s gauge\n", name, outcome, name)
		for g := range groups {
			dst = append(dst, name...)
			dst = append(dst, '{')
			dst = appendGroupLabels(dst, g)
			dst = dst[:len(dst)-1] // drop the trailing comma
			dst = append(dst, "} "...)
			if name == "push_time_seconds" {
				dst = strconv.AppendFloat(dst, 1.7e9+float64(g)/1000, 'e', -1, 64)
			} else {
				dst = append(dst, '0')
			}
			dst = append(dst, '\n')
		}
	}
	return dst
}

func appendGroupLabels(dst []byte, g int) []byte {
	dst = append(dst, `instance="i`...)
	dst = strconv.AppendInt(dst, int64(g), 10)
	dst = append(dst, `",job="`+Job+`",`...)
	return dst
}

func appendHeader(dst []byte, f family) []byte {
	dst = append(dst, "# HELP "...)
	dst = append(dst, f.name...)
	dst = append(dst, ' ')
	dst = append(dst, f.help...)
	dst = append(dst, "\n# TYPE "...)
	dst = append(dst, f.name...)
	switch f.typ {
	case dto.MetricType_COUNTER:
		dst = append(dst, " counter\n"...)
	case dto.MetricType_GAUGE:
		dst = append(dst, " gauge\n"...)
	case dto.MetricType_HISTOGRAM:
		dst = append(dst, " histogram\n"...)
	case dto.MetricType_SUMMARY:
		dst = append(dst, " summary\n"...)
	}
	return dst
}

// appendSeries appends every sample line of family f; extra is a label list
// ending in a comma that goes before the family's own labels.
func appendSeries(dst []byte, f family, fi, groupIndex, seq int, extra string) []byte {
	for si, lps := range f.labels {
		v := newValues(groupIndex, seq, fi, si)
		switch f.typ {
		case dto.MetricType_HISTOGRAM:
			h := v.histogram()
			for bi, ub := range bucketBounds {
				dst = appendSample(dst, f.name, "_bucket", extra, lps, "le", strconv.FormatFloat(ub, 'g', -1, 64), float64(h.cumulative[bi]))
			}
			dst = appendSample(dst, f.name, "_bucket", extra, lps, "le", "+Inf", float64(h.count))
			dst = appendSample(dst, f.name, "_sum", extra, lps, "", "", h.sum)
			dst = appendSample(dst, f.name, "_count", extra, lps, "", "", float64(h.count))
		case dto.MetricType_SUMMARY:
			s := v.summary()
			for qi, q := range quantiles {
				dst = appendSample(dst, f.name, "", extra, lps, "quantile", strconv.FormatFloat(q, 'g', -1, 64), s.quantiles[qi])
			}
			dst = appendSample(dst, f.name, "_sum", extra, lps, "", "", s.sum)
			dst = appendSample(dst, f.name, "_count", extra, lps, "", "", float64(s.count))
		default:
			dst = appendSample(dst, f.name, "", extra, lps, "", "", v.scalar(f.typ))
		}
	}
	return dst
}

func appendSample(dst []byte, name, suffix, extra string, lps []labelPair, xName, xValue string, value float64) []byte {
	dst = append(dst, name...)
	dst = append(dst, suffix...)
	dst = append(dst, '{')
	dst = append(dst, extra...)
	for i, lp := range lps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, lp.name...)
		dst = append(dst, `="`...)
		dst = append(dst, lp.value...)
		dst = append(dst, '"')
	}
	if xName != "" {
		dst = append(dst, ',')
		dst = append(dst, xName...)
		dst = append(dst, `="`...)
		dst = append(dst, xValue...)
		dst = append(dst, '"')
	}
	dst = append(dst, "} "...)
	dst = strconv.AppendFloat(dst, value, 'g', -1, 64)
	return append(dst, '\n')
}

// Families returns push seq of group groupIndex as client_model families,
// holding exactly the samples that Text renders.
func Families(groupIndex, seq int) []*dto.MetricFamily {
	fams := families()
	out := make([]*dto.MetricFamily, 0, len(fams))
	for fi, f := range fams {
		mf := &dto.MetricFamily{Name: ptr(f.name), Help: ptr(f.help), Type: f.typ.Enum()}
		for si, lps := range f.labels {
			v := newValues(groupIndex, seq, fi, si)
			m := &dto.Metric{}
			for _, lp := range lps {
				m.Label = append(m.Label, &dto.LabelPair{Name: ptr(lp.name), Value: ptr(lp.value)})
			}
			switch f.typ {
			case dto.MetricType_COUNTER:
				m.Counter = &dto.Counter{Value: ptr(v.scalar(f.typ))}
			case dto.MetricType_GAUGE:
				m.Gauge = &dto.Gauge{Value: ptr(v.scalar(f.typ))}
			case dto.MetricType_HISTOGRAM:
				h := v.histogram()
				dh := &dto.Histogram{SampleCount: ptr(h.count), SampleSum: ptr(h.sum)}
				for bi, ub := range bucketBounds {
					dh.Bucket = append(dh.Bucket, &dto.Bucket{UpperBound: ptr(ub), CumulativeCount: ptr(h.cumulative[bi])})
				}
				m.Histogram = dh
			case dto.MetricType_SUMMARY:
				s := v.summary()
				ds := &dto.Summary{SampleCount: ptr(s.count), SampleSum: ptr(s.sum)}
				for qi, q := range quantiles {
					ds.Quantile = append(ds.Quantile, &dto.Quantile{Quantile: ptr(q), Value: ptr(s.quantiles[qi])})
				}
				m.Summary = ds
			}
			mf.Metric = append(mf.Metric, m)
		}
		out = append(out, mf)
	}
	return out
}

// Protobuf renders push seq of group groupIndex as length-delimited
// MetricFamily messages (ProtobufContentType), encoded by expfmt.
func Protobuf(groupIndex, seq int) ([]byte, error) {
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeProtoDelim))
	for _, mf := range Families(groupIndex, seq) {
		if err := enc.Encode(mf); err != nil {
			return nil, fmt.Errorf("encode family %s: %w", mf.GetName(), err)
		}
	}
	return buf.Bytes(), nil
}

func ptr[T any](v T) *T { return &v }

// values is a deterministic pseudo-random source for one series of one push
// (splitmix64), so that values vary per push and per group yet repeat
// exactly between runs.
type values struct {
	state uint64
	seq   int
}

func newValues(groupIndex, seq, fi, si int) *values {
	s := uint64(groupIndex)*0x9E3779B97F4A7C15 ^ uint64(seq)*0xBF58476D1CE4E5B9 ^ uint64(fi*64+si)*0x94D049BB133111EB
	return &values{state: s, seq: seq}
}

func (v *values) next() uint64 {
	v.state += 0x9E3779B97F4A7C15
	z := v.state
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// unit returns a float in [0, 1).
func (v *values) unit() float64 { return float64(v.next()>>11) / (1 << 53) }

// scalar returns a counter value that grows with the push sequence, or a
// gauge value that wanders.
func (v *values) scalar(t dto.MetricType) float64 {
	if t == dto.MetricType_COUNTER {
		return float64(v.seq)*1000 + math.Floor(v.unit()*1e6)
	}
	return math.Round(v.unit()*1e9) / 1e3
}

type histogramValues struct {
	cumulative [len(bucketBounds)]uint64
	count      uint64
	sum        float64
}

func (v *values) histogram() histogramValues {
	var h histogramValues
	var c uint64
	for i := range bucketBounds {
		c += v.next() % 200
		h.cumulative[i] = c
	}
	h.count = c + v.next()%20
	h.sum = math.Round(float64(h.count)*v.unit()*2e3) / 1e3
	return h
}

type summaryValues struct {
	quantiles [len(quantiles)]float64
	count     uint64
	sum       float64
}

func (v *values) summary() summaryValues {
	var s summaryValues
	q := 0.0
	for i := range quantiles {
		q += v.unit() * 0.2
		s.quantiles[i] = math.Round(q*1e6) / 1e6
	}
	s.count = 1000 + v.next()%100000
	s.sum = math.Round(float64(s.count)*v.unit()*200) / 1e3
	return s
}
