package filejournal

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/pushgate/pushgate/journal"
	"hash/crc32"
	"io"
	"sort"
)

// CorruptionError reports damaged journal data: a bad file header, or a
// record that fails its checks and is followed by valid data, so it cannot
// be the torn tail of a crash. Open returns it without touching the file.
type CorruptionError struct {
	// Path is the journal file.
	Path string
	// Offset is the byte offset of the damaged header or record.
	Offset int64
	// Reason says which check failed.
	Reason string
}

// Error names the file, the offset and the way out.
func (e *CorruptionError) Error() string {
	what := "record"
	if e.Offset < fileHeaderSize {
		what = "file header"
	}
	return fmt.Sprintf("journal %s: corrupt %s at offset %d: %s; move the file aside to start with an empty store",
		e.Path, what, e.Offset, e.Reason)
}

// replayed is the live state read from a journal file.
type replayed struct {
	end     int64 // offset just past the last valid record
	records uint64
	// torn is why the bytes from end to the end of the file were rejected,
	// or "" if the file ended cleanly.
	torn string
	live map[string]replayedKey
}

// replayedKey is a key's last write: record offset, op index inside the
// record, value.
type replayedKey struct {
	off   int64
	op    int
	value []byte
}

// replay reads the records of f after the file header up to size. A record
// that fails a check ends the replay: if no valid record follows it, it is a
// torn tail (reported in replayed.torn); otherwise the result is a
// *CorruptionError.
func replay(ctx context.Context, f file, path string, size int64) (*replayed, error) {
	r := &replayed{end: fileHeaderSize, live: make(map[string]replayedKey)}
	br := bufio.NewReaderSize(io.NewSectionReader(f, fileHeaderSize, size-fileHeaderSize), 1<<20)
	var hdr [recordHeaderSize]byte
	off := int64(fileHeaderSize)
	bad := ""
	for off < size {
		if r.records%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("journal %s: replay: %w", path, err)
			}
		}
		if size-off < recordHeaderSize {
			bad = fmt.Sprintf("incomplete record header (%d of %d bytes)", size-off, recordHeaderSize)
			break
		}
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return nil, fmt.Errorf("journal %s: read record header at offset %d: %w", path, off, err)
		}
		length, sum, ok := parseRecordHeader(hdr[:])
		if !ok {
			bad = "record header checksum mismatch"
			break
		}
		if length > maxRecordSize {
			bad = fmt.Sprintf("record length %d exceeds the %d byte limit", length, maxRecordSize)
			break
		}
		if left := size - off - recordHeaderSize; int64(length) > left {
			bad = fmt.Sprintf("record of %d bytes runs past the end of the file (%d bytes left)", length, left)
			break
		}
		payload := make([]byte, length)
		if _, err := io.ReadFull(br, payload); err != nil {
			return nil, fmt.Errorf("journal %s: read record at offset %d: %w", path, off, err)
		}
		if crc32.Checksum(payload, castagnoli) != sum {
			bad = "checksum mismatch"
			break
		}
		err := decodePayload(payload, func(i int, op journal.Op) {
			switch op.Kind {
			case journal.OpSet:
				r.live[op.Key] = replayedKey{off: off, op: i, value: op.Value}
			case journal.OpDelete:
				delete(r.live, op.Key)
			case journal.OpDeleteAll:
				clear(r.live)
			}
		})
		if err != nil {
			// The checksum matched, so this is not a torn write.
			return nil, &CorruptionError{Path: path, Offset: off, Reason: err.Error()}
		}
		r.records++
		off += recordHeaderSize + int64(length)
		r.end = off
	}
	if bad == "" {
		return r, nil
	}
	found, err := validRecordAfter(f, off+1, size)
	if err != nil {
		return nil, fmt.Errorf("journal %s: scan after bad record at offset %d: %w", path, off, err)
	}
	if found >= 0 {
		return nil, &CorruptionError{Path: path, Offset: off,
			Reason: fmt.Sprintf("%s (a valid record follows at offset %d, so this is not a torn tail)", bad, found)}
	}
	r.torn = bad
	return r, nil
}

// liveInOrder returns the live keys in the file order of their last write.
func (r *replayed) liveInOrder() []string {
	keys := make([]string, 0, len(r.live))
	for k := range r.live {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		ka, kb := r.live[keys[a]], r.live[keys[b]]
		if ka.off != kb.off {
			return ka.off < kb.off
		}
		return ka.op < kb.op
	})
	return keys
}

// validRecordAfter returns the offset of the first complete record with
// valid checksums starting at or after from, or -1 if there is none. It
// decides whether a bad record is a torn tail (nothing valid after it) or
// damage in the middle of the file. It runs only when a record fails, so it
// favours simplicity over speed: one 8-byte CRC per candidate offset.
func validRecordAfter(f file, from, size int64) (int64, error) {
	const window = 1 << 20
	buf := make([]byte, window+recordHeaderSize)
	for start := from; start+recordHeaderSize <= size; start += window {
		n := min(int64(len(buf)), size-start)
		if _, err := f.ReadAt(buf[:n], start); err != nil && !errors.Is(err, io.EOF) {
			return -1, err
		}
		for i := int64(0); i < window && i+recordHeaderSize <= n; i++ {
			at := start + i
			length := int64(binary.LittleEndian.Uint32(buf[i:]))
			if length > size-at-recordHeaderSize {
				continue
			}
			_, sum, ok := parseRecordHeader(buf[i : i+recordHeaderSize])
			if !ok {
				continue
			}
			payload := make([]byte, length)
			if _, err := f.ReadAt(payload, at+recordHeaderSize); err != nil && !errors.Is(err, io.EOF) {
				return -1, err
			}
			if crc32.Checksum(payload, castagnoli) == sum {
				return at, nil
			}
		}
	}
	return -1, nil
}
