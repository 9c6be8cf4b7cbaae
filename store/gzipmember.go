package store

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/pushgate/pushgate/internal/gzipcat"
)

// gzipMember writes one gzip member (RFC 1952) assembled from raw DEFLATE
// segments: the cached, sync-flushed segments of plain families, and runs
// of bytes streamed for this scrape (HELP/TYPE lines, the gateway's own
// metrics, families rendered per scrape, families without a segment yet),
// compressed in sync-flushed chunks (see chunkSize). Every segment and run
// ends byte-aligned without a final block, so concatenating them is one valid
// DEFLATE stream; close adds the final block, the CRC-32 of the whole body
// (combined from the segments' CRCs) and its length.
type gzipMember struct {
	w io.Writer
	// chunks compresses the runs (see chunkSize). A run cannot continue
	// across a segment: the compressor's history would not hold the
	// segment's bytes its back-references must skip.
	chunks runChunks
	// open is true while a run has bytes not yet flushed; runLen counts
	// them.
	open   bool
	runLen int
	// minRun is the run length below which cached segments are streamed
	// instead (see the constant minRun).
	minRun int
	crc    uint32
	size   uint64
}

// gzipHeader is a gzip member header: deflate, no flags, no mtime, OS
// unknown (what compress/gzip writes).
var gzipHeader = [10]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}

// finalBlock is an empty final block with fixed Huffman codes (BFINAL 1,
// BTYPE 01, end-of-block code 0000000), written after a byte boundary.
var finalBlock = [2]byte{0x03, 0x00}

// minRun is the length an open run reaches before a cached segment may end
// it; families with segments met before that are streamed into the run.
// Ending a run costs a block with its own Huffman tables (~5 us, what
// streaming ~3 KB costs), so without this a scrape where half the
// families changed, alternating with unchanged ones, paid it per family.
const minRun = 16 << 10

// newGzipMember writes the member header to w.
func newGzipMember(w io.Writer, rs *renderState, minRun int) (*gzipMember, error) {
	if _, err := w.Write(gzipHeader[:]); err != nil {
		return nil, err
	}
	return &gzipMember{w: w, minRun: minRun, chunks: runChunks{w: w, rs: rs}}, nil
}

// Write adds bytes rendered for this scrape to the current run.
func (g *gzipMember) Write(p []byte) (int, error) {
	if !g.open {
		g.open, g.runLen = true, 0
	}
	if err := g.chunks.write(p); err != nil {
		return 0, fmt.Errorf("compress scrape body: %w", err)
	}
	g.crc = crc32.Update(g.crc, crc32.IEEETable, p)
	g.size += uint64(len(p))
	g.runLen += len(p)
	return len(p), nil
}

// absorbs reports whether a family with a cached segment should rather be
// streamed into the open run, because the run is still short.
func (g *gzipMember) absorbs() bool {
	return g.open && g.runLen < g.minRun
}

// writeSegment adds a cached segment whose uncompressed body has the given
// CRC-32, length and gzipcat.CRCShift(length).
func (g *gzipMember) writeSegment(seg []byte, crc uint32, size int, shift uint32) error {
	if err := g.endRun(); err != nil {
		return err
	}
	if _, err := g.w.Write(seg); err != nil {
		return err
	}
	g.crc = gzipcat.CRCCombine(g.crc, crc, shift)
	g.size += uint64(size)
	return nil
}

// endRun sync-flushes the open run, if any, so that it ends byte-aligned.
func (g *gzipMember) endRun() error {
	if !g.open {
		return nil
	}
	g.open = false
	if err := g.chunks.flush(); err != nil {
		return fmt.Errorf("compress scrape body: %w", err)
	}
	return nil
}

// close ends the member: the open run, the final block, CRC-32 and ISIZE
// (the length modulo 2^32).
func (g *gzipMember) close() error {
	if err := g.endRun(); err != nil {
		return err
	}
	var trailer [10]byte
	copy(trailer[:], finalBlock[:])
	binary.LittleEndian.PutUint32(trailer[2:], g.crc)
	binary.LittleEndian.PutUint32(trailer[6:], uint32(g.size))
	_, err := g.w.Write(trailer[:])
	return err
}

// release stops the chunk compression and returns its compressors.
func (g *gzipMember) release() {
	g.chunks.release()
}
