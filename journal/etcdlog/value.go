package etcdlog

import (
	"fmt"

	"github.com/klauspost/compress/s2"

	"github.com/pushgate/pushgate/groupcodec"
)

// stored returns what etcd stores for the group value v: v itself when it
// is a group record that compresses its own metrics (groupcodec.Compressed:
// the store's records since version 3), so that nothing is compressed
// twice, and otherwise v's s2 block (every value an earlier pushgate wrote,
// and any value that is not such a record). unstored tells the two apart.
func stored(v []byte) []byte {
	if groupcodec.Compressed(v) {
		return v
	}
	return s2.Encode(nil, v)
}

// storedBound is the most bytes stored(v) takes.
func storedBound(v []byte) int {
	if groupcodec.Compressed(v) {
		return len(v)
	}
	return s2.MaxEncodedLen(len(v))
}

// unstored returns the group value etcd's value v holds (see stored): v
// itself, or a new buffer holding its s2 block decompressed.
func unstored(v []byte) ([]byte, error) {
	if groupcodec.Compressed(v) {
		return v, nil
	}
	out, err := s2.Decode(nil, v)
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	return out, nil
}
