package filejournal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/pushgate/pushgate/journal"
	"hash/crc32"
)

// The on-disk layout, little endian throughout:
//
//	file   = header record*
//	header = magic[8] version[4] crc32c(magic, version)[4]
//	record = length[4] crc32c(payload)[4] crc32c(length, crc32c(payload))[4] payload[length]
//	payload = op+                      (all ops of one Append, applied together or not at all)
//	op     = kind[1] uvarint(len(key)) key [uvarint(len(value)) value]   (value only for journal.OpSet)
//
// The third header word checks the first two, so a damaged length field is
// told apart from a record cut short by a crash: a torn record has an intact
// header whose length runs past the end of the file, a bit flip in the length
// fails the header check.

const (
	fileHeaderSize   = 16
	recordHeaderSize = 12
	fileVersion      = 1
	// maxRecordSize bounds one record's payload; a larger length field is
	// damage, not data.
	maxRecordSize = 1 << 30
)

// fileMagic opens every journal file. The high first byte and the CR LF / ^Z
// bytes catch text-mode mangling, like PNG's signature; 0x89 can never start a
// gob stream, which gobfile.Sniff relies on.
var fileMagic = [8]byte{0x89, 'P', 'G', 'J', '\r', '\n', 0x1a, '\n'}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fileHeader returns the 16 header bytes of a new journal file.
func fileHeader() []byte {
	h := make([]byte, fileHeaderSize)
	copy(h, fileMagic[:])
	binary.LittleEndian.PutUint32(h[8:], fileVersion)
	binary.LittleEndian.PutUint32(h[12:], crc32.Checksum(h[:12], castagnoli))
	return h
}

// checkFileHeader reports what is wrong with h, or "" if it is a valid
// header of a version this package reads.
func checkFileHeader(h []byte) string {
	if [8]byte(h[:8]) != fileMagic {
		return "bad magic (not a pushgate journal)"
	}
	if binary.LittleEndian.Uint32(h[12:]) != crc32.Checksum(h[:12], castagnoli) {
		return "file header checksum mismatch"
	}
	if v := binary.LittleEndian.Uint32(h[8:]); v != fileVersion {
		return fmt.Sprintf("unsupported journal version %d (this build reads version %d)", v, fileVersion)
	}
	return ""
}

// opSize is the encoded size of op inside a payload.
func opSize(op journal.Op) int {
	n := 1
	if op.Kind == journal.OpDeleteAll {
		return n
	}
	n += uvarintLen(uint64(len(op.Key))) + len(op.Key)
	if op.Kind == journal.OpSet {
		n += uvarintLen(uint64(len(op.Value))) + len(op.Value)
	}
	return n
}

// setRecordSize is the size of a record holding only Set key=value of the
// given lengths: what the key costs in a freshly compacted file.
func setRecordSize(keyLen, valueLen int) int64 {
	return int64(recordHeaderSize + 1 + uvarintLen(uint64(keyLen)) + keyLen + uvarintLen(uint64(valueLen)) + valueLen)
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// validateOps checks kinds and size before anything is encoded.
func validateOps(ops []journal.Op) (payloadSize int, err error) {
	for i, op := range ops {
		switch op.Kind {
		case journal.OpSet, journal.OpDelete, journal.OpDeleteAll:
		default:
			return 0, fmt.Errorf("op %d: invalid kind %d", i, op.Kind)
		}
		payloadSize += opSize(op)
		if payloadSize > maxRecordSize {
			return 0, fmt.Errorf("record of %d ops exceeds the %d byte limit", len(ops), maxRecordSize)
		}
	}
	return payloadSize, nil
}

// appendRecord appends one record holding ops to dst. payloadSize must be
// the value validateOps returned for ops.
func appendRecord(dst []byte, ops []journal.Op, payloadSize int) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, recordHeaderSize)...)
	for _, op := range ops {
		dst = append(dst, byte(op.Kind))
		if op.Kind == journal.OpDeleteAll {
			continue
		}
		dst = binary.AppendUvarint(dst, uint64(len(op.Key)))
		dst = append(dst, op.Key...)
		if op.Kind == journal.OpSet {
			dst = binary.AppendUvarint(dst, uint64(len(op.Value)))
			dst = append(dst, op.Value...)
		}
	}
	putRecordHeader(dst[start:start+recordHeaderSize], dst[start+recordHeaderSize:])
	return dst
}

func putRecordHeader(h, payload []byte) {
	binary.LittleEndian.PutUint32(h[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(payload, castagnoli))
	binary.LittleEndian.PutUint32(h[8:], crc32.Checksum(h[:8], castagnoli))
}

// parseRecordHeader returns the payload length and checksum of a record
// header, or ok=false if the header's own checksum fails.
func parseRecordHeader(h []byte) (length uint32, sum uint32, ok bool) {
	if binary.LittleEndian.Uint32(h[8:]) != crc32.Checksum(h[:8], castagnoli) {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint32(h[0:]), binary.LittleEndian.Uint32(h[4:]), true
}

var errMalformedPayload = errors.New("malformed record payload")

// decodePayload calls fn for each op in payload, in order. Key and Value
// alias payload.
func decodePayload(payload []byte, fn func(i int, op journal.Op)) error {
	for i := 0; len(payload) > 0; i++ {
		op := journal.Op{Kind: journal.OpKind(payload[0])}
		payload = payload[1:]
		switch op.Kind {
		case journal.OpDeleteAll:
			fn(i, op)
			continue
		case journal.OpSet, journal.OpDelete:
		default:
			return fmt.Errorf("%w: op %d has unknown kind %d", errMalformedPayload, i, op.Kind)
		}
		key, rest, ok := cutBytes(payload)
		if !ok {
			return fmt.Errorf("%w: op %d key runs past the payload", errMalformedPayload, i)
		}
		op.Key, payload = string(key), rest
		if op.Kind == journal.OpSet {
			if op.Value, payload, ok = cutBytes(payload); !ok {
				return fmt.Errorf("%w: op %d value runs past the payload", errMalformedPayload, i)
			}
		}
		fn(i, op)
	}
	return nil
}

// cutBytes splits a uvarint-length-prefixed byte string off the front of b.
func cutBytes(b []byte) (s, rest []byte, ok bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return nil, nil, false
	}
	end := w + int(n)
	return b[w:end:end], b[end:], true
}
