package store

import (
	"sync"
	"sync/atomic"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/internal/gzipcat"
	"github.com/pushgate/pushgate/internal/pipewrite"
)

// renderState is what pushes and scrapes share about rendering: the text
// encoding pushes render for, and the buffers and flate writers scrapes
// reuse.
type renderState struct {
	// enc is the text encoding last scraped (an exposition.Encoding; the
	// zero value is text 0.0.4). Pushes render their families' bodies in
	// it, so that a scrape of unchanged data only copies bytes (DESIGN §6).
	enc atomic.Int32
	// compressors are the flate writers gzip scrapes reuse.
	compressors gzipcat.Compressors
	// scratches holds *scratch for pushes: growing fresh buffers to the
	// text bodies' size in every push was 18 KB and 27 allocations of a
	// 31 KB push (BenchmarkPush text).
	scratches sync.Pool
	// gzipCalm is set when the last gzip scrape found under calmShare of
	// its text new (changed since the gzip scrape before): the next one
	// may then build segments up to calmBudget (see segmentBudget).
	gzipCalm atomic.Bool
	// protobufCached is set by protobuf scrapes, which keep the families'
	// decompressed protobuf bytes, and cleared by the text scrape that drops
	// them, so that other text scrapes do not visit every family to check.
	protobufCached atomic.Bool
	// gathers holds *gatherBuffers for scrapes.
	gathers sync.Pool
	// buffers holds the output buffers of scrapes (pipewrite.Writer) and
	// those cached text bodies are decoded into (writeTextBatches).
	buffers *pipewrite.Pool
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

// scraped records that a scrape in enc is served, so that later pushes
// render for it. Protobuf scrapes are ignored: their bodies are the stored
// bytes.
func (rs *renderState) scraped(enc exposition.Encoding) {
	if enc != exposition.EncodingProtobuf && rs.encoding() != enc {
		rs.enc.Store(int32(enc))
	}
}

// gatherBuffers returns a scrape's gathering slices; give them back with
// putGatherBuffers.
func (rs *renderState) gatherBuffers() *gatherBuffers {
	if g, ok := rs.gathers.Get().(*gatherBuffers); ok {
		return g
	}
	return &gatherBuffers{}
}

// putGatherBuffers clears the slices, so that they keep no family alive,
// and keeps them for the next scrape.
func (rs *renderState) putGatherBuffers(g *gatherBuffers) {
	clear(g.run[:cap(g.run)])
	clear(g.parts[:cap(g.parts)])
	g.run, g.parts = g.run[:0], g.parts[:0]
	rs.gathers.Put(g)
}
