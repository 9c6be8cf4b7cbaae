package gzipcat

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// Member writes one gzip member (RFC 1952) assembled from segments
// compressed ahead of time (a scrape's cached family segments) and runs of
// bytes written to it (for a scrape: HELP/TYPE lines, the gateway's own
// metrics, families rendered per scrape, families without a segment yet),
// compressed in sync-flushed chunks (see chunkSize). Every segment and run
// ends byte-aligned without a final block, so concatenating them is one
// valid DEFLATE stream; Close adds the final block, the CRC-32 of the whole
// body (combined from the segments' CRCs) and its length.
type Member struct {
	w io.Writer
	// chunks compresses the runs (see chunkSize). A run cannot continue
	// across a segment: the compressor's history would not hold the
	// segment's bytes its back-references must skip.
	chunks runChunks
	// open is true while a run has bytes not yet flushed; runLen counts
	// them.
	open   bool
	runLen int
	// minRun is the run length below which segments are better streamed
	// into the run (see MinRun and Absorbs).
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

// MinRun is the length an open run should reach before a segment may end
// it; bodies with segments met before that are better streamed into the
// run (Absorbs). Ending a run costs a block with its own Huffman tables (~5
// us, what streaming ~3 KB costs), so without this a scrape where half the
// families changed, alternating with unchanged ones, paid it per family.
const MinRun = 16 << 10

// NewMember writes the member header to w. Runs are compressed with
// writers from c; minRun is the length below which Absorbs is true (MinRun,
// or another for tests). Call Release when done, whatever happened.
func NewMember(w io.Writer, c *Compressors, minRun int) (*Member, error) {
	if _, err := w.Write(gzipHeader[:]); err != nil {
		return nil, fmt.Errorf("write gzip header: %w", err)
	}
	return &Member{w: w, minRun: minRun, chunks: runChunks{w: w, from: c}}, nil
}

// Write adds p to the current run.
func (g *Member) Write(p []byte) (int, error) {
	if !g.open {
		g.open, g.runLen = true, 0
	}
	if err := g.chunks.write(p); err != nil {
		return 0, fmt.Errorf("compress gzip run: %w", err)
	}
	g.crc = crc32.Update(g.crc, crc32.IEEETable, p)
	g.size += uint64(len(p))
	g.runLen += len(p)
	return len(p), nil
}

// Absorbs reports whether a body with a segment should rather be written
// into the open run, because the run is still short.
func (g *Member) Absorbs() bool {
	return g.open && g.runLen < g.minRun
}

// WriteSegment ends the open run, if any, and adds seg.
func (g *Member) WriteSegment(seg Segment) error {
	if err := g.endRun(); err != nil {
		return err
	}
	if _, err := g.w.Write(seg.Deflate); err != nil {
		return err
	}
	g.crc = CRCCombine(g.crc, seg.CRC, seg.Shift)
	g.size += uint64(seg.Size)
	return nil
}

// endRun sync-flushes the open run, if any, so that it ends byte-aligned.
func (g *Member) endRun() error {
	if !g.open {
		return nil
	}
	g.open = false
	if err := g.chunks.flush(); err != nil {
		return fmt.Errorf("compress gzip run: %w", err)
	}
	return nil
}

// Close ends the member: the open run, the final block, CRC-32 and ISIZE
// (the length modulo 2^32). It does not close the underlying writer.
func (g *Member) Close() error {
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

// Release stops the run compression and returns its writers.
func (g *Member) Release() {
	g.chunks.release()
}
