package gzipcat

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"
)

// Level is the flate level of segments and of the runs a Member
// compresses. Measured on the bench payload's family bodies (~700 bytes
// each), one reused writer, sync-flushed per body (BenchmarkSegmentLevel):
// BestSpeed 94 MB/s at 26.7% of the text; level 4 85 MB/s at 26.4%; level
// 6 48 MB/s at 25.6%; level 9 15 MB/s at 25.4%; Huffman only 124 MB/s at
// 65.6%; StatelessDeflate 75–81 MB/s at 26.7%. The per-block Huffman
// header dominates at this size, so higher levels buy almost nothing.
const Level = flate.BestSpeed

// Compressors reuses flate writers at Level: one holds about a megabyte of
// state, and a gzip response uses two (one for its runs, one for new
// segments). The zero value is ready to use; it is safe for concurrent use.
type Compressors struct {
	pool sync.Pool
}

// Get returns a flate writer at Level writing to w; give it back with Put.
func (c *Compressors) Get(w io.Writer) (*flate.Writer, error) {
	if zw, ok := c.pool.Get().(*flate.Writer); ok {
		zw.Reset(w)
		return zw, nil
	}
	zw, err := flate.NewWriter(w, Level)
	if err != nil {
		return nil, fmt.Errorf("new flate writer: %w", err)
	}
	return zw, nil
}

// Put returns a flate writer for reuse; nil is ignored.
func (c *Compressors) Put(zw *flate.Writer) {
	if zw != nil {
		zw.Reset(io.Discard)
		c.pool.Put(zw)
	}
}

// Segment is a body compressed on its own into raw DEFLATE, with what a
// Member needs to take it without reading the body: its CRC-32, its
// length and CRCShift of that length.
type Segment struct {
	// Deflate ends with a sync flush: byte-aligned, no final block, so
	// that segments concatenate.
	Deflate []byte
	// CRC is the CRC-32 (IEEE) of the body, Size its length and Shift
	// CRCShift(Size).
	CRC   uint32
	Size  int
	Shift uint32
}

// Segmenter compresses bodies into segments, reusing one flate writer it
// takes from From at the first body, so that a response that builds no
// segment takes none. A zero From makes one for itself.
type Segmenter struct {
	// From is where the writer comes from and goes back to.
	From *Compressors
	zw   *flate.Writer
	buf  bytes.Buffer
}

// Segment compresses body into a new segment.
func (s *Segmenter) Segment(body []byte) (Segment, error) {
	s.buf.Reset()
	if s.zw == nil {
		if s.From == nil {
			s.From = new(Compressors)
		}
		zw, err := s.From.Get(&s.buf)
		if err != nil {
			return Segment{}, err
		}
		s.zw = zw
	} else {
		s.zw.Reset(&s.buf)
	}
	if _, err := s.zw.Write(body); err != nil {
		return Segment{}, fmt.Errorf("compress segment: %w", err)
	}
	// Flush, not Close: a sync flush ends the segment on a byte boundary
	// without a final block.
	if err := s.zw.Flush(); err != nil {
		return Segment{}, fmt.Errorf("compress segment: %w", err)
	}
	return Segment{
		Deflate: bytes.Clone(s.buf.Bytes()),
		CRC:     crc32.ChecksumIEEE(body),
		Size:    len(body),
		Shift:   CRCShift(uint64(len(body))),
	}, nil
}

// Release returns the writer, if one was taken.
func (s *Segmenter) Release() {
	if s.zw == nil {
		return
	}
	s.From.Put(s.zw)
	s.zw = nil
}
