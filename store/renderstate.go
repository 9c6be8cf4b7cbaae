package store

import (
	"sync"
	"sync/atomic"

	"github.com/pushgate/pushgate/exposition"
)

// renderState is what pushes and scrapes share about rendering: the text
// encoding pushes render for, and whether scrapes left protobuf bytes in
// the families' caches.
type renderState struct {
	// enc is the text encoding last scraped (an exposition.Encoding; the
	// zero value is text 0.0.4). Pushes render their families' bodies in
	// it, so that a scrape of unchanged data only copies bytes (DESIGN §6).
	enc atomic.Int32
	// scratches holds *scratch for pushes: growing fresh buffers to the
	// text bodies' size in every push was 18 KB and 27 allocations of a
	// 31 KB push (BenchmarkPush text).
	scratches sync.Pool
	// protobufCached is set by protobuf scrapes, which keep the families'
	// decompressed protobuf bytes, and cleared by the text scrape that drops
	// them, so that other text scrapes do not visit every family to check.
	protobufCached atomic.Bool
}

// maxScratch is the largest buffer a pooled scratch keeps, so that one huge
// family does not pin its memory forever.
const maxScratch = 1 << 20

// scratch returns reusable push buffers; give them back with putScratch.
func (rs *renderState) scratch() *scratch {
	if sc, ok := rs.scratches.Get().(*scratch); ok {
		return sc
	}
	return &scratch{}
}

// putScratch returns push buffers for reuse.
func (rs *renderState) putScratch(sc *scratch) {
	if cap(sc.body) > maxScratch || cap(sc.packed) > maxScratch || cap(sc.packedText) > maxScratch {
		return
	}
	rs.scratches.Put(sc)
}

// encoding returns the encoding pushes render text bodies in.
func (rs *renderState) encoding() exposition.Encoding {
	return exposition.Encoding(rs.enc.Load())
}

// scraped records that a scrape in enc starts, so that later pushes render
// for it, and reports whether it must drop the families' cached protobuf
// bytes as it passes them (a text scrape after a protobuf one). Protobuf
// scrapes leave the encoding alone: their bodies are the stored bytes.
func (rs *renderState) scraped(enc exposition.Encoding) (dropProtobuf bool) {
	if enc == exposition.EncodingProtobuf {
		rs.protobufCached.Store(true)
		return false
	}
	if rs.encoding() != enc {
		rs.enc.Store(int32(enc))
	}
	return rs.protobufCached.Swap(false)
}
