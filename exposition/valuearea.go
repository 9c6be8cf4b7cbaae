package exposition

import (
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// A value area holds the values of a family's protobuf bytes (as stored:
// field 4 of MetricFamily for each metric) apart from the bytes: each
// value field in the order the bytes hold them, a double as its 8 bytes
// (little-endian, as protobuf writes it), a count as its varint. The
// bytes with their doubles set to zero (ExtractValues) are then the
// family's skeleton: every push of one text template (TextTemplate) to a
// group has the same skeleton, and only the area changes
// (TextTemplate.AppendValues). Package store keeps a family re-pushed
// from its template as the s2 block of the skeleton, copied, and a new
// area, instead of decompressing the last push's block, writing the
// values and compressing the result again; the bytes are put together
// again when read (AppendWithValues).
//
// A count keeps in the skeleton the varint of the push that made it; while
// the area's counts have varints of the same lengths, the bytes put
// together are as long as the skeleton, and the values are written over a
// copy of it.

// fieldKind is the kind of a value field of a family's protobuf bytes.
type fieldKind uint8

const (
	fieldDouble       fieldKind = iota // the value of a gauge, counter or untyped metric, a sum or a quantile's value
	fieldSummaryCount                  // a summary's sample_count
	fieldHistCount                     // a histogram's sample_count or a bucket's cumulative_count
)

// countKind returns the kind of a count field of a message of kind kind.
func countKind(kind walkKind) fieldKind {
	if kind == walkSummary {
		return fieldSummaryCount
	}
	return fieldHistCount
}

// count returns v, a body value, as the parser stores it in a count field
// of kind k, and false where the rewrite does not follow the parser.
func (k fieldKind) count(v float64) (uint64, bool) {
	if k == fieldSummaryCount {
		// The parser stores uint64(v) for any v; only where that is
		// defined does the rewrite follow it.
		if !(v >= 0 && v < 1<<64) {
			return 0, false
		}
		return uint64(v), true
	}
	// The parser's test for an integer count: any other is a float count,
	// which the template's bytes have no field for.
	u := uint64(v)
	return u, v == float64(u)
}

// ExtractValues appends to area the values of b, a family's protobuf bytes
// as stored, and sets every double of b to zero, which makes b the
// family's skeleton. ok is false when b holds a field a text push cannot
// hold (the fields TextTemplate.AppendFamily rewrites).
func ExtractValues(area, b []byte) ([]byte, bool) {
	w := valueWalk{inPlace: true, visit: func(raw []byte, count bool) bool {
		area = append(area, raw...)
		if !count {
			clear(raw)
		}
		return true
	}}
	_, ok := w.metrics(nil, b)
	return area, ok
}

// ApplyValues writes the values of area into b, a family's skeleton
// (ExtractValues) decompressed, in place, and reports whether they fit:
// one value for each value field, every count's varint as long as the
// skeleton's. When they do not, b's values are partly written, and its
// fields are as they were: AppendWithValues writes the bytes from it.
func ApplyValues(b, area []byte) bool {
	w := valueWalk{inPlace: true, fromArea: true, area: area}
	_, ok := w.metrics(nil, b)
	return ok && len(w.area) == 0
}

// AppendWithValues appends to dst the protobuf bytes of a family whose
// skeleton (ExtractValues), decompressed, is skel, and whose value area is
// area, written field by field, as AppendFamily does when a count's varint
// changes its length. ok is false when area does not fit skel: other than
// one value for each value field. skel must not overlap dst's free
// capacity.
func AppendWithValues(dst, skel, area []byte) ([]byte, bool) {
	w := valueWalk{fromArea: true, area: area}
	dst, ok := w.metrics(dst, skel)
	return dst, ok && len(w.area) == 0
}

// AppendValues appends to dst the value area of family i of a push whose
// body matched the template with values vals (the family's skeleton is
// that of every push of the template to the group). ok is false where
// AppendFamily would fail: a count that is not stored as the parser
// would store it.
func (t *TextTemplate) AppendValues(dst []byte, i int, vals []float64) ([]byte, bool) {
	f := &t.families[i]
	for j, k := range f.slots {
		v := vals[k]
		if f.kinds[j] == fieldDouble {
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
			continue
		}
		u, ok := f.kinds[j].count(v)
		if !ok {
			return dst, false
		}
		dst = protowire.AppendVarint(dst, u)
	}
	return dst, true
}
