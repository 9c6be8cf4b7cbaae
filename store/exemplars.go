package store

import (
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pushgate/pushgate/exposition"
)

// storedExemplarNamesLegacy reports whether every exemplar label name in b,
// a family's stored protobuf bytes (repeated field 4 of MetricFamily), is a
// legacy label name, reading the bytes in place: the part of plainness that
// a restored family's series labels do not tell (exposition.LegacyNames).
// Bytes it cannot read count as not plain, which only costs rendering.
func storedExemplarNamesLegacy(b []byte) bool {
	return eachMessage(b, 4, func(metric []byte) bool {
		return eachMessage(metric, 3, func(counter []byte) bool {
			return eachMessage(counter, 2, exemplarNamesLegacy)
		}) && eachMessage(metric, 7, func(histogram []byte) bool {
			return eachMessage(histogram, 3, func(bucket []byte) bool {
				return eachMessage(bucket, 3, exemplarNamesLegacy)
			}) && eachMessage(histogram, 16, exemplarNamesLegacy)
		})
	})
}

// exemplarNamesLegacy reports whether every label name of the Exemplar
// message b is a legacy label name.
func exemplarNamesLegacy(b []byte) bool {
	return eachMessage(b, 1, func(pair []byte) bool {
		return eachMessage(pair, 1, func(name []byte) bool {
			return exposition.ValidLabelName(string(name), false)
		})
	})
}

// eachMessage calls fn with the value of every length-delimited field num
// of the message b, in order, until fn returns false; it reports whether
// every call returned true and b was well formed.
func eachMessage(b []byte, num protowire.Number, fn func([]byte) bool) bool {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return false
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 || !fn(v) {
				return false
			}
			b = b[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return false
		}
		b = b[l:]
	}
	return true
}
