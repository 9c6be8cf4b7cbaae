package store

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/flate"
)

// gzipMember writes one gzip member (RFC 1952) assembled from raw DEFLATE
// segments: the cached, sync-flushed segments of plain families, and
// segments compressed on the spot for everything else (HELP/TYPE lines, the
// gateway's own metrics, families rendered per scrape). Every segment ends
// byte-aligned without a final block, so concatenating them is one valid
// DEFLATE stream; close adds the final block, the CRC-32 of the whole body
// (combined from the segments' CRCs) and its length.
type gzipMember struct {
	w io.Writer
	// pending holds bytes rendered for this scrape, compressed together
	// before the next cached segment or at the end.
	pending []byte
	crc     uint32
	size    uint64
}

// gzipHeader is a gzip member header: deflate, no flags, no mtime, OS
// unknown (what compress/gzip writes).
var gzipHeader = [10]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}

// finalBlock is an empty final block with fixed Huffman codes (BFINAL 1,
// BTYPE 01, end-of-block code 0000000), written after a byte boundary.
var finalBlock = [2]byte{0x03, 0x00}

// pendingLimit bounds the bytes rendered for the scrape that wait to be
// compressed: large enough that a run of headers compresses as one segment.
const pendingLimit = 64 << 10

// newGzipMember writes the member header to w.
func newGzipMember(w io.Writer) (*gzipMember, error) {
	if _, err := w.Write(gzipHeader[:]); err != nil {
		return nil, err
	}
	return &gzipMember{w: w}, nil
}

// Write adds bytes rendered for this scrape to the body.
func (g *gzipMember) Write(p []byte) (int, error) {
	g.pending = append(g.pending, p...)
	g.crc = crc32.Update(g.crc, crc32.IEEETable, p)
	g.size += uint64(len(p))
	if len(g.pending) >= pendingLimit {
		if err := g.flushPending(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// writeSegment adds a cached segment whose uncompressed body has the given
// CRC-32, length and crcShift(length).
func (g *gzipMember) writeSegment(seg []byte, crc uint32, size int, shift uint32) error {
	if err := g.flushPending(); err != nil {
		return err
	}
	if _, err := g.w.Write(seg); err != nil {
		return err
	}
	g.crc = crcCombine(g.crc, crc, shift)
	g.size += uint64(size)
	return nil
}

// flushPending compresses the pending bytes into a sync-flushed segment.
// StatelessDeflate needs no writer state, so a scrape of cached families
// allocates no compressor; it falls back to stored blocks where nothing
// compresses.
func (g *gzipMember) flushPending() error {
	if len(g.pending) == 0 {
		return nil
	}
	if err := flate.StatelessDeflate(g.w, g.pending, false, nil); err != nil {
		return fmt.Errorf("compress scrape body: %w", err)
	}
	g.pending = g.pending[:0]
	return nil
}

// close ends the member: the pending bytes, the final block, CRC-32 and
// ISIZE (the length modulo 2^32).
func (g *gzipMember) close() error {
	if err := g.flushPending(); err != nil {
		return err
	}
	var trailer [10]byte
	copy(trailer[:], finalBlock[:])
	binary.LittleEndian.PutUint32(trailer[2:], g.crc)
	binary.LittleEndian.PutUint32(trailer[6:], uint32(g.size))
	_, err := g.w.Write(trailer[:])
	return err
}
