package store

import (
	"fmt"
	"sync/atomic"

	"github.com/klauspost/compress/s2"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/internal/gzipcat"
)

// textBody is the cached text or OpenMetrics body of a plain family, made
// when a scrape needs more than the body the push rendered (Family.pushed):
// a body in another encoding, or the gzip state (seen by a gzip scrape, a
// deflate segment). Its body is immutable; adding the deflate segment
// installs a new one.
//
// The body is kept as an s2 block, not as text: at 10,000 groups of the
// bench payload the raw bodies were 78.5 MB, the s2 blocks are 22 MB, and s2
// decodes these ~1 KB blocks at 5.2 GB/s on this machine
// (BenchmarkTextBlock/decode). Writing all 10,000 groups' bodies
// through a 64 KiB bufio took 16.3 ms decoding s2 against 19.3 ms copying
// raw bodies (BenchmarkTextCache; reading 3.6x fewer bytes pays for the
// decode), and an HTTP text scrape of the built binary measured 52–99 ms
// against 55–62 ms for the raw cache in the same run (noise dominates).
type textBody struct {
	enc exposition.Encoding
	// size is the length of the uncompressed body.
	size int
	// packed is the s2 block of the body.
	packed []byte
	// segment is the body as a raw DEFLATE segment, with its CRC-32, what
	// a gzip scrape writes instead of compressing the body again; empty
	// until a gzip scrape finds the body already seen by an earlier one
	// (see segmentBudget). The CRC is computed with the segment, since
	// only segments need it (computing it in every push was 1.5% of its
	// CPU).
	segment gzipcat.Segment
	// gzipSeen is set by the first gzip scrape that streams the body
	// without a segment: a body still there at the next gzip scrape
	// survived a scrape interval unchanged and is worth a segment.
	gzipSeen atomic.Bool
}

// renderScratch holds the buffers a scrape renders and decodes into, reused
// across its families.
type renderScratch struct {
	body, packed, text []byte
	// segments compresses family segments with a flate writer taken from
	// the store's pool at the first segment a scrape has to build, so a
	// scrape of cached families uses none.
	segments gzipcat.Segmenter
	// budget is the text bytes this scrape may still compress into new
	// segments.
	budget int
	// allText and newText count the text bytes a gzip scrape wrote, and
	// those of bodies no earlier gzip scrape had seen.
	allText, newText int64
}

// textBody returns the family's cached body for enc, rendering and caching
// it first if the cache holds nothing or another encoding (a scrape in
// another encoding than pushes rendered for). Only plain families are
// cached: the others depend on the scrape's escaping scheme.
func (f *Family) textBody(enc exposition.Encoding, sc *renderScratch) (*textBody, error) {
	cur := f.text.Load()
	if cur != nil && cur.enc == enc {
		return cur, nil
	}
	if p := f.pushed; p.packed != nil && exposition.Encoding(p.enc) == enc {
		tb := &textBody{enc: enc, size: int(p.size), packed: p.packed}
		if f.text.CompareAndSwap(cur, tb) {
			return tb, nil
		}
		// Another scrape stored one first: use it if it is of this encoding.
		if other := f.text.Load(); other != nil && other.enc == enc {
			return other, nil
		}
		return tb, nil
	}
	mf, err := f.Decode()
	if err != nil {
		return nil, err
	}
	sc.body, err = exposition.AppendBody(sc.body[:0], mf, exposition.NewFormat(enc))
	if err != nil {
		return nil, fmt.Errorf("render family %q: %w", f.Name(), err)
	}
	tb := &textBody{enc: enc, size: len(sc.body), packed: packInto(&sc.packed, sc.body)}
	f.text.Store(tb)
	return tb, nil
}

// decode returns the body as text, in sc's buffer.
func (tb *textBody) decode(f *Family, sc *renderScratch) ([]byte, error) {
	if cap(sc.text) < tb.size {
		sc.text = make([]byte, tb.size)
	}
	b, err := s2.Decode(sc.text[:cap(sc.text)], tb.packed)
	if err != nil {
		return nil, fmt.Errorf("decompress cached body of %q: %w", f.Name(), err)
	}
	return b, nil
}

// withSegment returns tb with its deflate segment, compressing and caching
// it first if need be. A concurrent scrape may do the same work; the cache
// keeps one of the two equal results.
func (f *Family) withSegment(tb *textBody, sc *renderScratch) (*textBody, error) {
	if tb.segment.Deflate != nil {
		return tb, nil
	}
	body, err := tb.decode(f, sc)
	if err != nil {
		return nil, err
	}
	seg, err := sc.segments.Segment(body)
	if err != nil {
		return nil, fmt.Errorf("compress cached body of %q: %w", f.Name(), err)
	}
	next := &textBody{enc: tb.enc, size: tb.size, packed: tb.packed, segment: seg}
	next.gzipSeen.Store(true)
	f.text.CompareAndSwap(tb, next)
	return next, nil
}
