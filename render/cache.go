// Package render holds what a stored family keeps to be scraped fast: the
// text body its push rendered, the bodies scrapes cached (text in another
// encoding, DEFLATE segments, decompressed protobuf bytes), and the state
// pushes and scrapes share about rendering (the encoding last scraped).
// Package store embeds a Cache in every family and fills it at push time;
// package scrape reads and fills it while writing a scrape.
package render

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/klauspost/compress/s2"
	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/exposition"
)

// Cache is the render cache of one stored family. Its zero value is an
// empty cache of a family that is not plain. It is kept by value in the
// family (store.Family) rather than behind a pointer: a separate TextBody
// per family was 7.2 MB of the 106 MB heap at 10,000 groups, and one more
// cache miss per family per scrape. Its fields are those the family held
// itself before they moved here, in the same order, so moving them changed
// neither the family's layout nor its size (a family was 128 bytes then).
// Since then it holds the family's protobuf block too (textRef). It must
// not be copied once used.
type Cache struct {
	// pushed is the family's s2 block of protobuf bytes (Stored) and the
	// text or OpenMetrics body the push rendered, in the encoding last
	// scraped, so that a scrape of unchanged data copies bytes (DESIGN §6),
	// and whether the family is plain.
	pushed textRef
	// text caches a body the push did not render: one of another encoding,
	// rendered by a scrape in that encoding, or the pushed body once a gzip
	// scrape has seen it or given it a deflate segment. Only one encoding is
	// kept, to bound memory. Protobuf bodies have a slot of their own, so
	// that a gateway scraped in both formats does not re-render every family
	// on each switch (8.7 s for a text scrape after a protobuf one at 10,000
	// groups, when protobuf bodies shared this cache).
	text atomic.Pointer[TextBody]
	// unpacked caches the decompressed protobuf bytes between protobuf
	// scrapes: decompressing on every scrape made a protobuf scrape of
	// 10,000 groups 2.5x slower. A text scrape drops it, so a gateway that
	// is not scraped by protobuf holds only the family's s2 block.
	unpacked atomic.Pointer[[]byte]
}

// textRef is a family's s2 block of protobuf bytes and, for a plain
// family, its text body in one encoding, as the push rendered it: both s2
// blocks in one allocation, the protobuf block first, with the length of
// that block, the body's length and its encoding, and the family's
// plainness in what would be padding. One slice for both blocks, where the
// family held a slice of each, made the family 112 bytes instead of 128
// (see store.Family for the figures). The allocation is held as a pointer
// and a length, not a slice: its capacity is never used, and the slice's
// third word made the family 112 bytes instead of 96 (1.6 MB at 10,000
// groups of the bench payload, see store.Family). The cache keeps it inline:
// following each family to a separate TextBody cost two cache misses per
// family, 18% of a 10,000-group text scrape. A copy in each scrape-order
// slot, so that a text scrape would not read the families either, was
// measured and removed: 15 alternating runs of BenchmarkScrape at 10,000
// groups, text 34.9 ms of CPU per scrape with the copy and 35.3 ms ±13%
// without, no other format faster with it, and the copies held 3.2 MB of
// the heap (BenchmarkStoreHeap 101.6 MB with, 98.4 without). A scrape in
// another encoding than the push rendered for finds enc differs and asks
// the cache (Cache.Text).
//
// A family kept as a skeleton and a value area (Metrics) holds its
// skeleton's block apart, behind skel, so that the families that follow it
// share the block instead of copying it (Skeleton).
type textRef struct {
	// skel is the s2 block of the family's skeleton, of pbLen bytes, when
	// the family is kept as a skeleton and a value area; data then holds
	// the area (area bytes, see exposition.ExtractValues), then the text
	// block when there are more bytes. With skel nil, data holds the
	// family's protobuf block, then the text block when pbLen is not
	// negative; with pbLen -1 the protobuf block alone. data is nil when
	// n is 0.
	skel  *byte
	data  *byte
	n     uint32
	pbLen int32
	size  int32
	// area is the length of the value area, 0 when skel is nil.
	area uint16
	enc  int8
	// plain is true when every name in the family is a legacy name
	// (exposition.LegacyNames), so its rendering does not depend on the
	// scrape's escaping scheme and can be cached per encoding.
	plain bool
}

// blocks returns the allocation that holds the blocks, with no room to grow.
func (p *textRef) blocks() []byte {
	return unsafe.Slice(p.data, p.n)
}

// setBlocks makes b the allocation that holds the blocks. b is shorter
// than 4 GiB: a family's protobuf bytes are under protobuf's 2 GiB message
// limit, so their s2 block is under 7/6 of that, and keep adds a text block
// only while the two stay under 1 GiB before compression.
func (p *textRef) setBlocks(b []byte) {
	if uint64(len(b)) > math.MaxUint32 {
		panic(fmt.Sprintf("render: a family's blocks of %d bytes do not fit the cache", len(b)))
	}
	p.data, p.n = unsafe.SliceData(b), uint32(len(b))
	if len(b) == 0 {
		p.data = nil
	}
}

// Scratch holds the buffers bodies are rendered and compressed into,
// reused across the families of one push or one scrape. The zero value is
// ready to use.
type Scratch struct {
	body, packed []byte
	// metrics takes a family's protobuf bytes, decompressed to render
	// them.
	metrics []byte
}

// MaxScratch is the largest buffer a pooled Scratch should keep, so that
// one huge family does not pin its memory forever.
const MaxScratch = 1 << 20

// Oversized reports whether sc holds a buffer larger than MaxScratch, and
// so should not be pooled.
func (sc *Scratch) Oversized() bool {
	return cap(sc.body) > MaxScratch || cap(sc.packed) > MaxScratch || cap(sc.metrics) > MaxScratch
}

// Fill fills an empty cache at push time with a copy of pb (the s2 block
// of the family's protobuf bytes, only valid until the caller's next use
// of its buffer), which Stored returns from then on. plain says whether
// every name of mf is a legacy name. A plain family's body is rendered now in
// enc (the text encoding last scraped, State.Encoding), straight from the
// dto the push decoded, so that scrapes only copy bytes; enc
// EncodingProtobuf renders none, and neither does a family that cannot be
// rendered in enc (it is stored all the same, so the outcome of a push
// never depends on enc).
//
// Rendering at push time adds about 15 us to a push of the 8-family bench
// payload (store's BenchmarkApply groups=0, alternating runs of both test
// binaries: 62-90 us before, 91-96 us after; 10.1 -> 10.8 KB and 81 -> 90
// allocations, the kept s2 block and TextBody per family, with the push
// buffers pooled); rendering the same bodies at scrape time cost ~24 us
// per family, because the scrape had to decode the stored protobuf first.
func (c *Cache) Fill(mf *dto.MetricFamily, plain bool, enc exposition.Encoding, pb []byte, sc *Scratch) {
	if !c.rendersText(plain, enc) {
		c.SetProtobuf(bytes.Clone(pb))
		return
	}
	var err error
	sc.body, err = exposition.AppendBody(sc.body[:0], mf, exposition.NewFormat(enc))
	c.keep(WholeBlock(pb), enc, err, sc)
}

// FillStored is Fill for a family given as its stored protobuf bytes
// (f.Metrics), which it renders from (exposition.AppendStoredBody), and
// kept as m: a push that reused the last push's skeleton
// (exposition.TextTemplate) has no decoded family to render.
func (c *Cache) FillStored(f exposition.StoredFamily, plain bool, enc exposition.Encoding, m Metrics, sc *Scratch) {
	if !c.rendersText(plain, enc) {
		c.setStored(m)
		return
	}
	var err error
	sc.body, err = exposition.AppendStoredBody(sc.body[:0], f, exposition.NewFormat(enc))
	c.keep(m, enc, err, sc)
}

// FillBody is Fill for a family whose body in enc the caller wrote,
// body (a push applied from its template writes it from the last one's:
// exposition.TextTemplate.AppendFamilyText), kept as m.
func (c *Cache) FillBody(body []byte, plain bool, enc exposition.Encoding, m Metrics, sc *Scratch) {
	if !c.rendersText(plain, enc) {
		c.setStored(m)
		return
	}
	sc.body = append(sc.body[:0], body...)
	c.keep(m, enc, nil, sc)
}

// TextIn returns the s2 block of the family's text body in enc, the one
// its push rendered or the one a scrape cached, and whether there is one.
func (c *Cache) TextIn(enc exposition.Encoding) (packed []byte, ok bool) {
	if packed, ok := c.pushed.text(); ok && exposition.Encoding(c.pushed.enc) == enc {
		return packed, true
	}
	if tb := c.text.Load(); tb != nil && tb.enc == enc {
		return tb.packed, true
	}
	return nil, false
}

// rendersText records whether the family is plain, and reports whether a
// fill renders its text body in enc: only a plain family's, and none in
// the protobuf encoding.
func (c *Cache) rendersText(plain bool, enc exposition.Encoding) bool {
	c.pushed.plain = plain
	return plain && enc != exposition.EncodingProtobuf
}

// keep stores the text body in sc.body, rendered in enc with the outcome
// err, as the pushed body beside a copy of m's block or value area, and
// m's skeleton.
func (c *Cache) keep(m Metrics, enc exposition.Encoding, err error, sc *Scratch) {
	if err != nil || len(sc.body)+int(m.skel.n)+len(m.block) > math.MaxInt32/2 {
		// No body to keep. A family that cannot be rendered in the
		// encoding last scraped (a float histogram in OpenMetrics 1.0)
		// is still stored: whether a push is accepted must not depend
		// on which format was scraped last (DESIGN §5), so it is
		// decided by the checks before, the same for every push. A
		// scrape in that encoding leaves the family out.
		c.setStored(m)
		return
	}
	text := EncodeInto(&sc.packed, sc.body)
	// The blocks share one allocation: one object less per family for the
	// collector to track (900,000 at 100,000 groups).
	own := m.own()
	all := make([]byte, len(own)+len(text))
	copy(all[copy(all, own):], text)
	c.pushed = textRef{pbLen: int32(len(own)), size: int32(len(sc.body)), enc: int8(enc), plain: true}
	c.pushed.setBlocks(all)
	c.pushed.setSkeleton(m)
}

// areaLen returns the length of a value area, which the caller keeps
// under 64 KiB (MaxArea).
func areaLen(area []byte) uint16 {
	if len(area) > MaxArea {
		panic(fmt.Sprintf("render: a value area of %d bytes does not fit the cache", len(area)))
	}
	return uint16(len(area))
}

// MaxArea is the longest value area a cache keeps beside a skeleton.
const MaxArea = math.MaxUint16

// SetProtobuf makes pb the family's s2 block of protobuf bytes, with no
// pushed body: for a family restored from its record, or not rendered at
// its push. The cache keeps pb.
func (c *Cache) SetProtobuf(pb []byte) {
	c.pushed.setBlocks(pb)
	c.pushed.skel, c.pushed.pbLen, c.pushed.size, c.pushed.area = nil, -1, 0, 0
}

// setStored keeps m, a copy of its block or of its value area beside its
// skeleton, with no pushed body.
func (c *Cache) setStored(m Metrics) {
	c.SetProtobuf(bytes.Clone(m.own()))
	c.pushed.setSkeleton(m)
}

// setSkeleton records m's skeleton when it has one: the blocks, set from
// m.own(), then start with its value area.
func (p *textRef) setSkeleton(m Metrics) {
	if m.skel.p != nil {
		p.skel, p.pbLen, p.area = m.skel.p, m.skel.n, areaLen(m.area)
	}
}

// Stored returns the family's s2 block of protobuf bytes and its value
// area: when the area is empty, the block holds the family's values;
// otherwise it is the s2 block of the family's skeleton, and the area
// holds the values (exposition.ExtractValues). Neither must be modified:
// the skeleton's block is shared by the families that follow one another
// from a template (Skeleton). AppendMetrics and Block put them together.
func (c *Cache) Stored() (pb, area []byte) {
	b := c.pushed.blocks()
	if c.pushed.skel != nil {
		n, a := int(c.pushed.pbLen), int(c.pushed.area)
		return unsafe.Slice(c.pushed.skel, n), b[:a:a]
	}
	end := len(b)
	if c.pushed.pbLen >= 0 {
		end = int(c.pushed.pbLen)
	}
	return b[:end:end], b[end:end:end]
}

// AppendMetrics appends to dst the family's protobuf bytes (the repeated
// field 4 of MetricFamily for every metric), decompressed, with the values
// of its value area written in (exposition.ApplyValues).
func (c *Cache) AppendMetrics(dst []byte) ([]byte, error) {
	pb, area := c.Stored()
	n, err := s2.DecodedLen(pb)
	if err != nil {
		return dst, fmt.Errorf("decompress: %w", err)
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	b, err := s2.Decode(dst[start:], pb)
	if err != nil {
		return dst[:start], fmt.Errorf("decompress: %w", err)
	}
	if len(area) == 0 || exposition.ApplyValues(b, area) {
		return dst, nil
	}
	// A count's varint changed its length since the skeleton was made:
	// the bytes are written anew from a copy of it.
	dst, ok := exposition.AppendWithValues(dst[:start], bytes.Clone(b), area)
	if !ok {
		return dst[:start], errors.New("the value area does not fit the protobuf bytes")
	}
	return dst, nil
}

// Block returns the s2 block of the family's protobuf bytes, as the
// journal stores them: the stored block when it holds the values,
// otherwise a new one, compressed from AppendMetrics.
func (c *Cache) Block() ([]byte, error) {
	pb, area := c.Stored()
	if len(area) == 0 {
		return pb, nil
	}
	b, err := c.AppendMetrics(nil)
	if err != nil {
		return nil, err
	}
	return s2.Encode(nil, b), nil
}

// text returns the s2 block of the pushed body, and whether there is one.
func (p *textRef) text() ([]byte, bool) {
	if p.skel != nil {
		if p.n <= uint32(p.area) {
			return nil, false
		}
		return p.blocks()[p.area:], true
	}
	if p.pbLen < 0 || p.data == nil {
		return nil, false
	}
	return p.blocks()[p.pbLen:], true
}

// SetPlain records whether the family is plain, for a family restored
// without a rendered body (Fill records it for the others).
func (c *Cache) SetPlain(plain bool) { c.pushed.plain = plain }

// Plain reports whether every name in the family is a legacy name
// (exposition.LegacyNames): its bodies then do not depend on the scrape's
// escaping scheme, so they are cached (Pushed, Text) and a protobuf scrape
// writes its stored bytes as they are (Protobuf).
func (c *Cache) Plain() bool { return c.pushed.plain }

// Pushed returns the s2 block of the text body the push rendered (in the
// encoding last scraped, DESIGN §6), its uncompressed size and its
// encoding; packed is nil when there is none (a family that is not plain,
// restored from the journal, or that cannot be rendered in that encoding).
// The block must not be modified.
func (c *Cache) Pushed() (packed []byte, size int, enc exposition.Encoding) {
	packed, ok := c.pushed.text()
	if !ok {
		return nil, 0, exposition.Encoding(c.pushed.enc)
	}
	return packed, int(c.pushed.size), exposition.Encoding(c.pushed.enc)
}

// EncodeInto returns the s2 block of b, encoded in the scratch buffer *buf
// (grown if need be); the result is only valid until the next use of buf.
func EncodeInto(buf *[]byte, b []byte) []byte {
	if n := s2.MaxEncodedLen(len(b)); cap(*buf) < n {
		*buf = make([]byte, n)
	}
	return s2.Encode((*buf)[:cap(*buf)], b)
}
