package render

import (
	"bytes"
	"sync/atomic"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/internal/gzipcat"
)

// TextBody is the cached text or OpenMetrics body of a plain family, made
// when a scrape needs more than the body the push rendered (Cache.Pushed):
// a body in another encoding, or the gzip state (seen by a gzip scrape, a
// deflate segment). Its body is immutable; adding the deflate segment
// installs a new one (Cache.CacheSegment).
//
// The body is kept as an s2 block, not as text: at 10,000 groups of the
// bench payload the raw bodies were 78.5 MB, the s2 blocks are 22 MB, and s2
// decodes these ~1 KB blocks at 5.2 GB/s on this machine
// (BenchmarkTextBlock/decode). Writing all 10,000 groups' bodies
// through a 64 KiB bufio took 16.3 ms decoding s2 against 19.3 ms copying
// raw bodies (BenchmarkTextCache; reading 3.6x fewer bytes pays for the
// decode), and an HTTP text scrape of the built binary measured 52–99 ms
// against 55–62 ms for the raw cache in the same run (noise dominates).
type TextBody struct {
	enc exposition.Encoding
	// size is the length of the uncompressed body.
	size int
	// packed is the s2 block of the body.
	packed []byte
	// segment is the body as a raw DEFLATE segment, with its CRC-32, what
	// a gzip scrape writes instead of compressing the body again; empty
	// until a gzip scrape finds the body already seen by an earlier one.
	// The CRC is computed with the segment, since only segments need it
	// (computing it in every push was 1.5% of its CPU).
	segment gzipcat.Segment
	// gzipSeen is set by the first gzip scrape that streams the body
	// without a segment: a body still there at the next gzip scrape
	// survived a scrape interval unchanged and is worth a segment.
	gzipSeen atomic.Bool
}

// Size returns the length of the uncompressed body.
func (tb *TextBody) Size() int { return tb.size }

// Packed returns the s2 block of the body; it must not be modified.
func (tb *TextBody) Packed() []byte { return tb.packed }

// Segment returns the body's cached DEFLATE segment; its Deflate is nil
// when there is none yet.
func (tb *TextBody) Segment() gzipcat.Segment { return tb.segment }

// GzipSeen reports whether a gzip scrape streamed the body already
// (MarkGzipSeen), or cached its segment.
func (tb *TextBody) GzipSeen() bool { return tb.gzipSeen.Load() }

// MarkGzipSeen records that a gzip scrape streamed the body without a
// segment: if the body is still there at the next gzip scrape, it survived
// a scrape interval unchanged and is worth one.
func (tb *TextBody) MarkGzipSeen() { tb.gzipSeen.Store(true) }

// CachedText returns the text body a scrape cached (Text), or nil.
func (c *Cache) CachedText() *TextBody { return c.text.Load() }

// Text returns the cached body for enc of src, the family c belongs to,
// rendering and caching it first if the cache holds nothing or another
// encoding (a scrape in another encoding than pushes rendered for). Only
// plain families are cached: the others depend on the scrape's escaping
// scheme (Body renders them).
func (c *Cache) Text(src Source, enc exposition.Encoding, sc *Scratch) (*TextBody, error) {
	cur := c.text.Load()
	if cur != nil && cur.enc == enc {
		return cur, nil
	}
	if packed, ok := c.pushed.text(); ok && exposition.Encoding(c.pushed.enc) == enc {
		tb := &TextBody{enc: enc, size: int(c.pushed.size), packed: packed}
		if c.text.CompareAndSwap(cur, tb) {
			return tb, nil
		}
		// Another scrape stored one first: use it if it is of this encoding.
		if other := c.text.Load(); other != nil && other.enc == enc {
			return other, nil
		}
		return tb, nil
	}
	var err error
	sc.body, err = c.appendStored(sc.body[:0], src, exposition.NewFormat(enc), sc)
	if err != nil {
		return nil, err
	}
	tb := &TextBody{enc: enc, size: len(sc.body), packed: bytes.Clone(EncodeInto(&sc.packed, sc.body))}
	c.text.Store(tb)
	return tb, nil
}

// HasText reports whether the cache holds a body of the family in enc, so
// that Text returns it without rendering.
func (c *Cache) HasText(enc exposition.Encoding) bool {
	if tb := c.text.Load(); tb != nil && tb.enc == enc {
		return true
	}
	_, ok := c.pushed.text()
	return ok && exposition.Encoding(c.pushed.enc) == enc
}

// CacheSegment returns tb, a body of the cache, with seg, the DEFLATE
// segment of its text, and caches that unless the cache moved on
// meanwhile. A concurrent scrape may do the same work; the cache keeps one
// of the two equal results.
func (c *Cache) CacheSegment(tb *TextBody, seg gzipcat.Segment) *TextBody {
	next := &TextBody{enc: tb.enc, size: tb.size, packed: tb.packed, segment: seg}
	next.gzipSeen.Store(true)
	c.text.CompareAndSwap(tb, next)
	return next
}

// Encoding returns the encoding of the body.
func (tb *TextBody) Encoding() exposition.Encoding { return tb.enc }
