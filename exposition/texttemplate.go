package exposition

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"unsafe"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protowire"
)

// valueRef is one sample value of a text body: where its token is in the
// body, and the field the parser stored it in (f for a float field, u for
// an integer one; neither when the parser dropped the value, as it drops a
// summary line without a quantile label).
type valueRef struct {
	start, end int
	f          *float64
	u          *uint64
}

// TextTemplate is what a text push shares with every later push of the
// same shape: the body with its sample values cut out (its skeleton), and,
// for each family it stores, which value of the body each value field of
// the family's protobuf bytes holds.
//
// A batch job pushes the same lines with new values each run. A body
// whose skeleton is byte for byte the skeleton of a body the gateway
// accepted for the group parses into the same families, metrics, labels
// and series, whatever its values: the parser reads each line on its own,
// and a value, at the end of its line, decides nothing but itself (and
// whether a count is an integer, which the rewrite checks as the parser
// does). So the stored bytes of such a push are those of the last push
// with the values replaced (AppendFamily), with nothing parsed, checked,
// sorted or hashed again. On the bench payload that is the difference
// between BenchmarkTextTemplate's match and rewrite and BenchmarkPush's
// whole text push; DESIGN §6 has the rule.
//
// A TextTemplate is immutable and safe for concurrent use.
type TextTemplate struct {
	skeleton []byte
	// cuts[k] is where value k was cut out of skeleton.
	cuts     []int32
	families []templateFamily
}

// templateFamily is one family of a template: its name, and for each
// value field of its protobuf bytes, in order, the body value it holds.
type templateFamily struct {
	name  string
	slots []int32
	// kinds[j] is the kind of value field j: a double, or a summary's or
	// histogram's count (AppendValues).
	kinds []fieldKind
	// lines holds, for each sample line of the family's text body, the
	// body value it shows (AppendFamilyText); nil when none was found.
	lines []templateLine
}

// Families returns how many families the template's pushes store.
func (t *TextTemplate) Families() int { return len(t.families) }

// FamilyName returns the name of family i, in the order BuildTextTemplate
// was given the families.
func (t *TextTemplate) FamilyName(i int) string { return t.families[i].name }

// Size returns the bytes the template holds, for a budget.
func (t *TextTemplate) Size() int {
	n := len(t.skeleton) + 4*len(t.cuts) + 64
	for _, f := range t.families {
		n += len(f.name) + 5*len(f.slots) + 64
	}
	return n
}

// BuildTextTemplate returns the template of d's text body, whose families,
// as the store keeps them, are families: checked (admission sorts labels
// and buckets, which the template follows), in the order the store keeps
// them, and none of d's dropped. It overwrites the families' sample
// values: call it once nothing needs them. ok is false when the body is
// not one a template describes: a protobuf body, one the expfmt fallback
// parsed, a value not at the end of its line, or a field the rewrite does
// not know (anything a text body cannot hold). sc is a scratch buffer.
func BuildTextTemplate(d *Decoded, families []*dto.MetricFamily, sc *[]byte) (*TextTemplate, bool) {
	body, refs := d.text, d.values
	if body == nil || len(refs) == 0 || len(refs) > math.MaxInt32 {
		return nil, false
	}
	t := &TextTemplate{cuts: make([]int32, len(refs))}
	skeleton := make([]byte, 0, len(body))
	prev := 0
	for k, r := range refs {
		// A value must end its line, so that no later value's place
		// depends on it, and follow a blank or the label set's '}', so
		// that its first byte cannot extend the metric name, as in
		// "a-1" (see TextTemplate).
		if r.start <= prev || r.end <= r.start || r.end >= len(body) || body[r.end] != '\n' {
			return nil, false
		}
		if c := body[r.start-1]; c != '}' && !isBlank(c) {
			return nil, false
		}
		skeleton = append(skeleton, body[prev:r.start]...)
		t.cuts[k] = int32(len(skeleton))
		prev = r.end
	}
	t.skeleton = append(skeleton, body[prev:]...)

	// Number the values from 1: each field then holds 1 + the index of
	// the value that fills it, and encoding the families shows which goes
	// where. 0 is what a renderer writes for a field no line set (a
	// summary without a _count line), so it names no value.
	for k, r := range refs {
		switch {
		case r.f != nil:
			*r.f = float64(k + 1)
		case r.u != nil:
			*r.u = uint64(k + 1)
		}
	}
	// Collecting reads the bytes and writes nothing (inPlace: no copy).
	w := valueWalk{seen: make([]bool, len(refs)), counts: make([]bool, len(refs)), inPlace: true}
	format := NewFormat(EncodingProtobuf).WithKnownFields()
	t.families = make([]templateFamily, len(families))
	for i, mf := range families {
		var err error
		if *sc, err = AppendBody((*sc)[:0], mf, format); err != nil {
			return nil, false
		}
		w.slots, w.kinds = nil, nil
		if _, ok := w.metrics(nil, *sc); !ok {
			return nil, false
		}
		// A copy: the name is a substring of the pooled body.
		t.families[i] = templateFamily{name: strings.Clone(mf.GetName()), slots: w.slots, kinds: w.kinds}
		t.families[i].lines = textLines(mf, w.seen, w.counts, sc)
	}
	// A value the parser stored and a later line replaced (a second
	// _count line of one histogram) has no field, but the parser still
	// judged it: whether it is an integer decides the histogram's kind,
	// and a negative one is refused. No template can follow that.
	for k, r := range refs {
		if (r.f != nil || r.u != nil) && !w.seen[k] {
			return nil, false
		}
	}
	return t, true
}

// Match reports whether body has the template's skeleton, and appends its
// values, parsed as the text parser parses them, to vals. A value is the
// run of bytes up to the next blank or LF; one that does not parse fails
// the match (the parser, given the body, says why).
func (t *TextTemplate) Match(body []byte, vals []float64) ([]float64, bool) {
	pos, prev := 0, 0
	for _, cut := range t.cuts {
		seg := t.skeleton[prev:cut]
		prev = int(cut)
		if !bytes.HasPrefix(body[pos:], seg) {
			return vals, false
		}
		pos += len(seg)
		end := pos
		for end < len(body) && body[end] != '\n' && !isBlank(body[end]) {
			end++
		}
		if end == pos {
			return vals, false
		}
		v, err := parseTextFloat(unsafe.String(&body[pos], end-pos))
		if err != nil {
			return vals, false
		}
		vals = append(vals, v)
		pos = end
	}
	return vals, bytes.Equal(body[pos:], t.skeleton[prev:])
}

// AppendFamily appends to dst the protobuf bytes (as stored: field 4 of
// MetricFamily for each metric) of family i of a push whose body matched
// the template with values vals, given old, the bytes of that family from
// a push of the same skeleton. ok is false when a value cannot be stored
// as the parser would store it: a histogram count that is not an integer,
// a summary count out of the range of uint64; or when old does not have
// the template's fields.
//
// The values are written over a copy of old where every one fits in the
// bytes of the one it replaces (a double always does, a count when its
// varint keeps its length): that leaves every length as it is, and took
// BenchmarkTextTemplate's match and rewrite of the bench payload from
// 11.2-12.7 to 8.2-9.6 us. Otherwise the bytes are written anew, field
// by field.
func (t *TextTemplate) AppendFamily(dst []byte, i int, old []byte, vals []float64) ([]byte, bool) {
	slots := t.families[i].slots
	start := len(dst)
	dst = append(dst, old...)
	w := valueWalk{slots: slots, vals: vals, inPlace: true}
	if _, ok := w.metrics(nil, dst[start:]); ok && w.next == len(slots) {
		return dst, true
	}
	w = valueWalk{slots: slots, vals: vals}
	dst, ok := w.metrics(dst[:start], old)
	return dst, ok && w.next == len(slots)
}

// valueWalk copies a family's protobuf bytes field by field. Rewriting
// (vals set), it replaces each value field by the body value its slot
// names; collecting (seen set), it reads each value field as the index of
// a body value and appends it to slots, and writes nothing.
type valueWalk struct {
	slots []int32
	next  int
	vals  []float64
	seen  []bool
	// counts marks, collecting, the body values that fill a count.
	counts []bool
	// inPlace rewrites the bytes walked, which must be a copy, instead
	// of appending to dst; a count whose varint would change its length
	// fails the walk.
	inPlace bool
	// floatsOnly fails the walk at a count (SetValues).
	floatsOnly bool
	// kinds collects, with slots, the kind of each value field.
	kinds []fieldKind
	// visit, when set, is called with the bytes of each value field in
	// turn (in place: inPlace must be set), and the walk fails when it
	// returns false (ExtractValues).
	visit func(raw []byte, count bool) bool
	// fromArea takes the values from area, a value area, consumed as the
	// walk goes (AppendWithValues).
	fromArea bool
	area     []byte
}

// The messages a family's protobuf bytes are made of, as valueWalk reads
// them.
type walkKind int

const (
	walkMetric walkKind = iota
	walkValue           // Gauge, Counter or Untyped: field 1 the value
	walkSummary
	walkQuantile
	walkHistogram
	walkBucket
)

// metrics walks src, a sequence of field-4 Metric messages.
func (w *valueWalk) metrics(dst, src []byte) ([]byte, bool) {
	for len(src) > 0 {
		num, typ, n := consumeTag(src)
		if n < 0 || num != fieldMetric || typ != protowire.BytesType {
			return dst, false
		}
		src = src[n:]
		msg, n := consumeBytes(src)
		if n < 0 {
			return dst, false
		}
		src = src[n:]
		var ok bool
		if dst, ok = w.message(dst, num, msg, walkMetric); !ok {
			return dst, false
		}
	}
	return dst, true
}

// message appends field num holding msg, a message of kind kind, walked.
// Its length is written once the walk knows it: a rewritten count may
// take more or fewer bytes than the old one.
func (w *valueWalk) message(dst []byte, num protowire.Number, msg []byte, kind walkKind) ([]byte, bool) {
	if w.inPlace {
		return w.fields(dst, msg, kind)
	}
	const reserve = 5 // The longest varint of a length under 2^35.
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	lenAt := len(dst)
	dst = append(dst, make([]byte, reserve)...)
	dst, ok := w.fields(dst, msg, kind)
	if !ok {
		return dst, false
	}
	body := len(dst) - lenAt - reserve
	n := protowire.SizeVarint(uint64(body))
	protowire.AppendVarint(dst[lenAt:lenAt], uint64(body))
	copy(dst[lenAt+n:], dst[lenAt+reserve:])
	return dst[:len(dst)-(reserve-n)], true
}

// fields walks the fields of msg, a message of kind kind: label pairs,
// quantiles and upper bounds are copied, values replaced or collected,
// and any other field fails the walk.
func (w *valueWalk) fields(dst, msg []byte, kind walkKind) ([]byte, bool) {
	for len(msg) > 0 {
		num, typ, n := consumeTag(msg)
		if n < 0 {
			return dst, false
		}
		var ok bool
		switch typ {
		case protowire.BytesType:
			sub, m := consumeBytes(msg[n:])
			if m < 0 {
				return dst, false
			}
			raw := msg[:n+m]
			msg = msg[n+m:]
			dst, ok = w.bytesField(dst, kind, num, sub, raw)
		case protowire.Fixed64Type:
			bits, m := protowire.ConsumeFixed64(msg[n:])
			if m < 0 {
				return dst, false
			}
			raw := msg[n : n+m]
			msg = msg[n+m:]
			dst, ok = w.fixedField(dst, kind, num, bits, raw)
		case protowire.VarintType:
			v, m := protowire.ConsumeVarint(msg[n:])
			if m < 0 {
				return dst, false
			}
			raw := msg[n : n+m]
			msg = msg[n+m:]
			dst, ok = w.varintField(dst, kind, num, v, raw)
		}
		if !ok {
			return dst, false
		}
	}
	return dst, true
}

// bytesField walks a length-delimited field num holding sub (raw is the
// whole field, tag included) of a message of kind kind.
func (w *valueWalk) bytesField(dst []byte, kind walkKind, num protowire.Number, sub, raw []byte) ([]byte, bool) {
	switch {
	case kind == walkMetric && num == 1: // A label pair.
		if w.inPlace {
			return dst, true
		}
		return append(dst, raw...), true
	case kind == walkMetric && (num == 2 || num == 3 || num == 5): // Gauge, Counter, Untyped.
		return w.message(dst, num, sub, walkValue)
	case kind == walkMetric && num == 4:
		return w.message(dst, num, sub, walkSummary)
	case kind == walkMetric && num == 7:
		return w.message(dst, num, sub, walkHistogram)
	case kind == walkSummary && num == 3:
		return w.message(dst, num, sub, walkQuantile)
	case kind == walkHistogram && num == 3:
		return w.message(dst, num, sub, walkBucket)
	}
	return dst, false
}

// fixedField walks a 64-bit field num (a double) of a message of kind
// kind, whose value bits raw holds.
func (w *valueWalk) fixedField(dst []byte, kind walkKind, num protowire.Number, bits uint64, raw []byte) ([]byte, bool) {
	switch {
	case kind == walkValue && num == 1, // The value of a gauge, counter or untyped metric.
		kind == walkSummary && num == 2,   // sample_sum
		kind == walkQuantile && num == 2,  // value
		kind == walkHistogram && num == 2: // sample_sum
		switch {
		case w.visit != nil:
			return dst, w.visit(raw, false)
		case w.fromArea:
			if len(w.area) < 8 {
				return dst, false
			}
			bits = binary.LittleEndian.Uint64(w.area)
			w.area = w.area[8:]
		case w.vals == nil:
			w.kinds = append(w.kinds, fieldDouble)
			return dst, w.collect(math.Float64frombits(bits))
		default:
			v, ok := w.value()
			if !ok {
				return dst, false
			}
			bits = math.Float64bits(v)
		}
		if w.inPlace {
			protowire.AppendFixed64(raw[:0], bits)
			return dst, true
		}
	case kind == walkQuantile && num == 1, kind == walkBucket && num == 2: // quantile, upper_bound
		if w.inPlace {
			return dst, true
		}
	default:
		return dst, false
	}
	dst = protowire.AppendTag(dst, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(dst, bits), true
}

// varintField walks a varint field num (a count) of a message of kind
// kind, whose value u raw holds.
func (w *valueWalk) varintField(dst []byte, kind walkKind, num protowire.Number, u uint64, raw []byte) ([]byte, bool) {
	if num != 1 || kind != walkSummary && kind != walkHistogram && kind != walkBucket || w.floatsOnly {
		return dst, false // sample_count, cumulative_count
	}
	switch {
	case w.visit != nil:
		return dst, w.visit(raw, true)
	case w.fromArea:
		var n int
		if u, n = protowire.ConsumeVarint(w.area); n < 0 {
			return dst, false
		}
		w.area = w.area[n:]
	case w.vals == nil:
		if u > math.MaxInt32 || !w.collect(float64(u)) {
			return dst, false
		}
		w.counts[u-1] = true
		w.kinds = append(w.kinds, countKind(kind))
		return dst, true
	default:
		v, ok := w.value()
		if !ok {
			return dst, false
		}
		if u, ok = countKind(kind).count(v); !ok {
			return dst, false
		}
	}
	if w.inPlace {
		if protowire.SizeVarint(u) != len(raw) {
			return dst, false
		}
		protowire.AppendVarint(raw[:0], u)
		return dst, true
	}
	dst = protowire.AppendTag(dst, num, protowire.VarintType)
	return protowire.AppendVarint(dst, u), true
}

// value returns the body value the next slot names.
func (w *valueWalk) value() (float64, bool) {
	if w.next >= len(w.slots) {
		return 0, false
	}
	k := w.slots[w.next]
	w.next++
	return w.vals[k], true
}

// collect records v, a numbered value (BuildTextTemplate: 1 + the index
// of a body value), as the next slot: it must name a body value no other
// field holds.
func (w *valueWalk) collect(v float64) bool {
	k := int(v) - 1
	if float64(k+1) != v || k < 0 || k >= len(w.seen) || w.seen[k] {
		return false
	}
	w.seen[k] = true
	w.slots = append(w.slots, int32(k))
	return true
}

// consumeTag is protowire.ConsumeTag with the one-byte tags of a family's
// fields read inline: the walk reads a tag and a length for every field.
// With both read inline, BenchmarkTextTemplate's match and rewrite took
// 9.6 us against 11.2 (10 alternating runs on a loaded machine, -15%,
// p=0.052).
func consumeTag(b []byte) (protowire.Number, protowire.Type, int) {
	if len(b) > 0 && b[0] < 0x80 && b[0] >= 8 {
		return protowire.Number(b[0] >> 3), protowire.Type(b[0] & 7), 1
	}
	return protowire.ConsumeTag(b)
}

// consumeBytes is protowire.ConsumeBytes with a length under 128 read
// inline.
func consumeBytes(b []byte) ([]byte, int) {
	if len(b) > 0 && b[0] < 0x80 {
		if n := int(b[0]); n < len(b) {
			return b[1 : 1+n], 1 + n
		}
	}
	return protowire.ConsumeBytes(b)
}
