package exposition

import (
	"bytes"

	"google.golang.org/protobuf/encoding/protowire"
)

// SameProtobufLabels reports whether the protobuf bodies a and b (as
// AppendBody writes them, see ProtobufBodyLabels) hold as many metrics,
// each with the same label pairs in the same order, encoded alike. It
// compares each pair's bytes without reading the pair, and skips every
// other field whole: what a caller derived from a's labels (the store:
// series hashes) holds for b when it reports true, at a fraction of the
// cost of reading b's labels again. Equal labels encoded differently, or a
// body it cannot read, report false.
func SameProtobufLabels(a, b []byte) bool {
	for len(a) > 0 && len(b) > 0 {
		ma, restA, okA := nextMetric(a)
		mb, restB, okB := nextMetric(b)
		if !okA || !okB || !sameMetricLabels(ma, mb) {
			return false
		}
		a, b = restA, restB
	}
	return len(a) == 0 && len(b) == 0
}

// nextMetric returns the first metric (field 4) of body b and the bytes
// after it; ok is false when b does not start with one.
func nextMetric(b []byte) (metric, rest []byte, ok bool) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num != fieldMetric || typ != protowire.BytesType {
		return nil, nil, false
	}
	metric, m := protowire.ConsumeBytes(b[n:])
	if m < 0 {
		return nil, nil, false
	}
	return metric, b[n+m:], true
}

// sameMetricLabels reports whether the Metric messages a and b hold the
// same label pairs (field 1), encoded alike, in the same order.
func sameMetricLabels(a, b []byte) bool {
	for {
		pa, restA, foundA, okA := nextLabelPair(a)
		pb, restB, foundB, okB := nextLabelPair(b)
		switch {
		case !okA || !okB || foundA != foundB:
			return false
		case !foundA:
			return true
		case !bytes.Equal(pa, pb):
			return false
		}
		a, b = restA, restB
	}
}

// nextLabelPair returns the next label pair (field 1) of the Metric
// message m and the bytes after it, skipping the other fields; found is
// false when m holds no more, ok false when m is malformed.
func nextLabelPair(m []byte) (pair, rest []byte, found, ok bool) {
	for len(m) > 0 {
		num, typ, n := protowire.ConsumeTag(m)
		if n < 0 {
			return nil, nil, false, false
		}
		m = m[n:]
		if num == 1 && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(m)
			if n < 0 {
				return nil, nil, false, false
			}
			return v, m[n:], true, true
		}
		n = protowire.ConsumeFieldValue(num, typ, m)
		if n < 0 {
			return nil, nil, false, false
		}
		m = m[n:]
	}
	return nil, nil, false, true
}
