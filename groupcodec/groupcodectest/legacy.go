// Package groupcodectest writes group records as earlier versions of pushgate
// wrote them, for tests that check they still load. It is test support
// only: nothing in the product imports it.
package groupcodectest

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/klauspost/compress/s2"

	"github.com/pushgate/pushgate/groupcodec"
)

// Legacy returns the record rec (of the current version, as the store
// encodes a group) as groupcodec version 1 or 2 wrote it: each family's
// protobuf bytes raw and, from version 2, the failure reason last.
func Legacy(version byte, rec []byte) ([]byte, error) {
	if version != 1 && version != 2 {
		return nil, fmt.Errorf("legacy record: no version %d", version)
	}
	g, err := groupcodec.Decode(rec)
	if err != nil {
		return nil, fmt.Errorf("legacy record: %w", err)
	}
	b := []byte{version}
	b = binary.AppendVarint(b, nanos(g.PushTime))
	b = binary.AppendVarint(b, nanos(g.FailureTime))
	b = binary.AppendUvarint(b, uint64(len(g.Labels)))
	for _, l := range g.Labels {
		b = appendString(appendString(b, l.Name), l.Value)
	}
	b = binary.AppendUvarint(b, uint64(len(g.Families)))
	for _, f := range g.Families {
		metrics := f.Metrics
		if f.Packed != nil {
			if metrics, err = s2.Decode(nil, f.Packed); err != nil {
				return nil, fmt.Errorf("legacy record: family %q: %w", f.Name, err)
			}
		}
		b = appendString(appendString(b, f.Name), f.Help)
		b = binary.AppendUvarint(b, uint64(f.Type))
		b = appendString(b, f.Unit)
		b = binary.AppendVarint(b, nanos(f.LastPush))
		b = appendString(b, string(metrics))
	}
	if version >= 2 {
		b = appendString(b, g.FailureReason)
	}
	return b, nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
