package exposition

import (
	"math"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// protoReader reads one encoded io.prometheus.client.MetricFamily at a time
// with protowire, the way VictoriaMetrics' text parser reads lines: strings
// are slices of the body, and the dto objects are carved out of arenas that
// a pooled decoder rewinds between pushes instead of allocating them anew.
//
// It handles exactly the fields a classic push uses: the family's name,
// help, type and unit; a metric's labels, timestamp and counter, gauge,
// untyped, summary or classic histogram value (counts, sum, quantiles,
// buckets) and the created timestamps of counters, summaries and
// histograms, which client_golang sets on every one of them since v1.20 (so
// leaving them to Unmarshal would leave most Go pushes on the slow path).
// Anything else (native histogram fields, exemplars, unknown fields or enum values, a field with an unexpected wire
// type, a singular message field given twice, which proto merges) and any
// malformed input make family report false, and the caller hands the
// message to proto.Unmarshal. So the result is always what proto.Unmarshal
// would give; FuzzProtoReaderMatchesUnmarshal holds it to that. Strings are
// not checked for UTF-8 here because proto.Unmarshal does not check them in
// a proto2 message either; checkFamily checks names and label values later.
//
// A protoReader must not be used concurrently.
type protoReader struct {
	// hint bounds the number of objects the rest of the body can hold; it
	// keeps a small body from allocating large arena chunks.
	hint int

	families     arena[protoFamily]
	metrics      arena[metricBox]
	metricPtrs   arena[*dto.Metric]
	labelPairs   arena[labelBox]
	labelPtrs    arena[*dto.LabelPair]
	counters     arena[counterBox]
	gauges       arena[gaugeBox]
	untypeds     arena[untypedBox]
	summaries    arena[summaryBox]
	quantiles    arena[quantileBox]
	quantilePtrs arena[*dto.Quantile]
	histograms   arena[histogramBox]
	buckets      arena[bucketBox]
	bucketPtrs   arena[*dto.Bucket]
	created      arena[timestamppb.Timestamp]

	// The repeated fields of the message being read gather here, then are
	// copied into an arena slice of the right length. No message kind
	// nests in itself, so one scratch slice per kind suffices.
	metricScratch   []*dto.Metric
	labelScratch    []*dto.LabelPair
	quantileScratch []*dto.Quantile
	bucketScratch   []*dto.Bucket
}

// protoFamily holds one family and the fields its pointers point to.
type protoFamily struct {
	mf               dto.MetricFamily
	name, help, unit string
	typ              dto.MetricType
}

// metricBox holds one metric and its timestamp.
type metricBox struct {
	m  dto.Metric
	ts int64
}

// summaryBox holds one summary and its count and sum.
type summaryBox struct {
	s     dto.Summary
	count uint64
	sum   float64
}

// histogramBox holds one classic histogram and its counts and sum.
type histogramBox struct {
	h          dto.Histogram
	count      uint64
	countFloat float64
	sum        float64
}

// rewind makes the arenas' memory available for the next body. Nothing
// read from the previous body may be used any more.
func (r *protoReader) rewind() {
	r.families.rewind(nil)
	r.metrics.rewind(nil)
	r.metricPtrs.rewind(nil)
	r.labelPairs.rewind(nil)
	r.labelPtrs.rewind(nil)
	r.counters.rewind(nil)
	r.gauges.rewind(nil)
	r.untypeds.rewind(nil)
	r.summaries.rewind(nil)
	r.quantiles.rewind(nil)
	r.quantilePtrs.rewind(nil)
	r.histograms.rewind(nil)
	r.buckets.rewind(nil)
	r.bucketPtrs.rewind(nil)
	r.created.rewind(nil)
	r.clearScratch()
}

// clearScratch drops the pointers a message abandoned halfway (on a
// fallback) left in the scratch slices.
func (r *protoReader) clearScratch() {
	clear(r.metricScratch[:cap(r.metricScratch)])
	clear(r.labelScratch[:cap(r.labelScratch)])
	clear(r.quantileScratch[:cap(r.quantileScratch)])
	clear(r.bucketScratch[:cap(r.bucketScratch)])
}

// pooledObjects returns how many objects r's arenas keep for reuse, a
// measure of the memory a pooled decoder pins.
func (r *protoReader) pooledObjects() int {
	return r.metrics.capacity() + r.labelPairs.capacity() + r.labelPtrs.capacity() + r.buckets.capacity()
}

// field reads the tag at the start of b. It returns the field's number and
// wire type and the rest of b after the tag; ok is false if b does not
// start with a valid tag.
func field(b []byte) (num protowire.Number, typ protowire.Type, rest []byte, ok bool) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return 0, 0, nil, false
	}
	return num, typ, b[n:], true
}

// bytesField reads a length-delimited field value at the start of b.
func bytesField(b []byte) (v, rest []byte, ok bool) {
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return nil, nil, false
	}
	return v, b[n:], true
}

// messageField reads a length-delimited field value at the start of b and
// parses it as a message with read.
func messageField[T any](b []byte, read func([]byte) (T, bool)) (t T, rest []byte, ok bool) {
	v, rest, ok := bytesField(b)
	if !ok {
		return t, nil, false
	}
	t, ok = read(v)
	return t, rest, ok
}

// varintField reads a varint field value at the start of b.
func varintField(b []byte) (v uint64, rest []byte, ok bool) {
	v, n := protowire.ConsumeVarint(b)
	if n < 0 {
		return 0, nil, false
	}
	return v, b[n:], true
}

// doubleField reads a fixed64 field value at the start of b as a double.
func doubleField(b []byte) (v float64, rest []byte, ok bool) {
	u, n := protowire.ConsumeFixed64(b)
	if n < 0 {
		return 0, nil, false
	}
	return math.Float64frombits(u), b[n:], true
}

// family reads one MetricFamily message; ok is false when the message must
// go to proto.Unmarshal instead.
func (r *protoReader) family(msg []byte) (pf *protoFamily, ok bool) {
	f := r.families.next(r.hint)
	metrics := r.metricScratch[:0]
	for len(msg) > 0 {
		var num protowire.Number
		var typ protowire.Type
		if num, typ, msg, ok = field(msg); !ok {
			return nil, false
		}
		var v []byte
		switch {
		case num == 1 && typ == protowire.BytesType:
			if v, msg, ok = bytesField(msg); !ok {
				return nil, false
			}
			f.name = bytesString(v)
			f.mf.Name = &f.name
		case num == 2 && typ == protowire.BytesType:
			if v, msg, ok = bytesField(msg); !ok {
				return nil, false
			}
			f.help = bytesString(v)
			f.mf.Help = &f.help
		case num == 3 && typ == protowire.VarintType:
			var t uint64
			if t, msg, ok = varintField(msg); !ok {
				return nil, false
			}
			// MetricType is a closed (proto2) enum: Unmarshal keeps a
			// value it does not know as an unknown field.
			if t > uint64(dto.MetricType_GAUGE_HISTOGRAM) {
				return nil, false
			}
			f.typ = dto.MetricType(t)
			f.mf.Type = &f.typ
		case num == 4 && typ == protowire.BytesType:
			var m *dto.Metric
			if m, msg, ok = messageField(msg, r.metric); !ok {
				return nil, false
			}
			metrics = append(metrics, m)
		case num == 5 && typ == protowire.BytesType:
			if v, msg, ok = bytesField(msg); !ok {
				return nil, false
			}
			f.unit = bytesString(v)
			f.mf.Unit = &f.unit
		default:
			return nil, false
		}
	}
	if len(metrics) > 0 {
		f.mf.Metric = r.metricPtrs.slice(len(metrics), r.hint)
		copy(f.mf.Metric, metrics)
		clear(metrics)
	}
	r.metricScratch = metrics[:0]
	return f, true
}

// metric reads one Metric message.
func (r *protoReader) metric(msg []byte) (*dto.Metric, bool) {
	b := r.metrics.next(r.hint)
	m := &b.m
	labels := r.labelScratch[:0]
	for len(msg) > 0 {
		num, typ, rest, ok := field(msg)
		if !ok {
			return nil, false
		}
		msg = rest
		if num == 6 {
			if typ != protowire.VarintType {
				return nil, false
			}
			var ts uint64
			if ts, msg, ok = varintField(msg); !ok {
				return nil, false
			}
			b.ts = int64(ts)
			m.TimestampMs = &b.ts
			continue
		}
		if typ != protowire.BytesType {
			return nil, false
		}
		var v []byte
		if v, msg, ok = bytesField(msg); !ok {
			return nil, false
		}
		// A singular message field given twice is merged by proto; that
		// is left to it (the second !ok below).
		switch num {
		case 1:
			var lp *dto.LabelPair
			if lp, ok = r.labelPair(v); !ok {
				return nil, false
			}
			labels = append(labels, lp)
		case 2:
			g := r.gauges.next(r.hint)
			if m.Gauge != nil || !readValue(v, &g.g.Value, &g.v) {
				return nil, false
			}
			m.Gauge = &g.g
		case 3:
			if m.Counter != nil {
				return nil, false
			}
			if m.Counter, ok = r.counter(v); !ok {
				return nil, false
			}
		case 4:
			if m.Summary != nil {
				return nil, false
			}
			if m.Summary, ok = r.summary(v); !ok {
				return nil, false
			}
		case 5:
			u := r.untypeds.next(r.hint)
			if m.Untyped != nil || !readValue(v, &u.u.Value, &u.v) {
				return nil, false
			}
			m.Untyped = &u.u
		case 7:
			if m.Histogram != nil {
				return nil, false
			}
			if m.Histogram, ok = r.histogram(v); !ok {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	if len(labels) > 0 {
		m.Label = r.labelPtrs.slice(len(labels), r.hint)
		copy(m.Label, labels)
		clear(labels)
	}
	r.labelScratch = labels[:0]
	return m, true
}

// labelPair reads one LabelPair message.
func (r *protoReader) labelPair(msg []byte) (*dto.LabelPair, bool) {
	b := r.labelPairs.next(r.hint)
	for len(msg) > 0 {
		num, typ, rest, ok := field(msg)
		if !ok || typ != protowire.BytesType || (num != 1 && num != 2) {
			return nil, false
		}
		var v []byte
		if v, msg, ok = bytesField(rest); !ok {
			return nil, false
		}
		if num == 1 {
			b.name = bytesString(v)
			b.lp.Name = &b.name
		} else {
			b.value = bytesString(v)
			b.lp.Value = &b.value
		}
	}
	return &b.lp, true
}

// counter reads one Counter message: its value and created timestamp (an
// exemplar goes to Unmarshal).
func (r *protoReader) counter(msg []byte) (*dto.Counter, bool) {
	b := r.counters.next(r.hint)
	for len(msg) > 0 {
		num, typ, rest, ok := field(msg)
		if !ok {
			return nil, false
		}
		msg = rest
		switch {
		case num == 1 && typ == protowire.Fixed64Type:
			if b.v, msg, ok = doubleField(msg); !ok {
				return nil, false
			}
			b.c.Value = &b.v
		case num == 3 && typ == protowire.BytesType && b.c.CreatedTimestamp == nil:
			if b.c.CreatedTimestamp, msg, ok = messageField(msg, r.timestamp); !ok {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	return &b.c, true
}

// timestamp reads one google.protobuf.Timestamp message (a created
// timestamp). Its fields are proto3 scalars: a repeated one overwrites.
func (r *protoReader) timestamp(msg []byte) (*timestamppb.Timestamp, bool) {
	ts := r.created.next(r.hint)
	for len(msg) > 0 {
		num, typ, rest, ok := field(msg)
		if !ok || typ != protowire.VarintType || (num != 1 && num != 2) {
			return nil, false
		}
		var v uint64
		if v, msg, ok = varintField(rest); !ok {
			return nil, false
		}
		if num == 1 {
			ts.Seconds = int64(v)
		} else {
			ts.Nanos = int32(v) // As proto decodes an int32: the low 32 bits.
		}
	}
	return ts, true
}

// readValue reads a Gauge or Untyped message, whose only field handled here is the double value 1, into *store, setting *value to store
// when the field is present.
func readValue(msg []byte, value **float64, store *float64) bool {
	for len(msg) > 0 {
		num, typ, rest, ok := field(msg)
		if !ok || num != 1 || typ != protowire.Fixed64Type {
			return false
		}
		if *store, msg, ok = doubleField(rest); !ok {
			return false
		}
		*value = store
	}
	return true
}

// summary reads one Summary message.
func (r *protoReader) summary(msg []byte) (*dto.Summary, bool) {
	b := r.summaries.next(r.hint)
	s := &b.s
	quantiles := r.quantileScratch[:0]
	for len(msg) > 0 {
		num, typ, rest, ok := field(msg)
		if !ok {
			return nil, false
		}
		msg = rest
		switch {
		case num == 1 && typ == protowire.VarintType:
			if b.count, msg, ok = varintField(msg); !ok {
				return nil, false
			}
			s.SampleCount = &b.count
		case num == 2 && typ == protowire.Fixed64Type:
			if b.sum, msg, ok = doubleField(msg); !ok {
				return nil, false
			}
			s.SampleSum = &b.sum
		case num == 3 && typ == protowire.BytesType:
			var q *dto.Quantile
			if q, msg, ok = messageField(msg, r.quantile); !ok {
				return nil, false
			}
			quantiles = append(quantiles, q)
		case num == 4 && typ == protowire.BytesType && s.CreatedTimestamp == nil:
			if s.CreatedTimestamp, msg, ok = messageField(msg, r.timestamp); !ok {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	if len(quantiles) > 0 {
		s.Quantile = r.quantilePtrs.slice(len(quantiles), r.hint)
		copy(s.Quantile, quantiles)
		clear(quantiles)
	}
	r.quantileScratch = quantiles[:0]
	return s, true
}

// quantile reads one Quantile message.
func (r *protoReader) quantile(msg []byte) (*dto.Quantile, bool) {
	b := r.quantiles.next(r.hint)
	for len(msg) > 0 {
		num, typ, rest, ok := field(msg)
		if !ok || typ != protowire.Fixed64Type || (num != 1 && num != 2) {
			return nil, false
		}
		if num == 1 {
			if b.quantile, msg, ok = doubleField(rest); !ok {
				return nil, false
			}
			b.q.Quantile = &b.quantile
		} else {
			if b.vl, msg, ok = doubleField(rest); !ok {
				return nil, false
			}
			b.q.Value = &b.vl
		}
	}
	return &b.q, true
}

// histogram reads one Histogram message holding a classic histogram.
func (r *protoReader) histogram(msg []byte) (*dto.Histogram, bool) {
	b := r.histograms.next(r.hint)
	h := &b.h
	buckets := r.bucketScratch[:0]
	for len(msg) > 0 {
		num, typ, rest, ok := field(msg)
		if !ok {
			return nil, false
		}
		msg = rest
		switch {
		case num == 1 && typ == protowire.VarintType:
			if b.count, msg, ok = varintField(msg); !ok {
				return nil, false
			}
			h.SampleCount = &b.count
		case num == 2 && typ == protowire.Fixed64Type:
			if b.sum, msg, ok = doubleField(msg); !ok {
				return nil, false
			}
			h.SampleSum = &b.sum
		case num == 3 && typ == protowire.BytesType:
			var bk *dto.Bucket
			if bk, msg, ok = messageField(msg, r.bucket); !ok {
				return nil, false
			}
			buckets = append(buckets, bk)
		case num == 4 && typ == protowire.Fixed64Type:
			if b.countFloat, msg, ok = doubleField(msg); !ok {
				return nil, false
			}
			h.SampleCountFloat = &b.countFloat
		case num == 15 && typ == protowire.BytesType && h.CreatedTimestamp == nil:
			if h.CreatedTimestamp, msg, ok = messageField(msg, r.timestamp); !ok {
				return nil, false
			}
		default:
			// Native histogram fields, exemplars, a created timestamp
			// given twice (proto merges them).
			return nil, false
		}
	}
	if len(buckets) > 0 {
		h.Bucket = r.bucketPtrs.slice(len(buckets), r.hint)
		copy(h.Bucket, buckets)
		clear(buckets)
	}
	r.bucketScratch = buckets[:0]
	return h, true
}

// bucket reads one Bucket message.
func (r *protoReader) bucket(msg []byte) (*dto.Bucket, bool) {
	b := r.buckets.next(r.hint)
	for len(msg) > 0 {
		num, typ, rest, ok := field(msg)
		if !ok {
			return nil, false
		}
		msg = rest
		switch {
		case num == 1 && typ == protowire.VarintType:
			if b.count, msg, ok = varintField(msg); !ok {
				return nil, false
			}
			b.b.CumulativeCount = &b.count
		case num == 2 && typ == protowire.Fixed64Type:
			if b.upper, msg, ok = doubleField(msg); !ok {
				return nil, false
			}
			b.b.UpperBound = &b.upper
		case num == 4 && typ == protowire.Fixed64Type:
			if b.countFloat, msg, ok = doubleField(msg); !ok {
				return nil, false
			}
			b.b.CumulativeCountFloat = &b.countFloat
		default:
			// The exemplar, or a field proto keeps as unknown.
			return nil, false
		}
	}
	return &b.b, true
}
