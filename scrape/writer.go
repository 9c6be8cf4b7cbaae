// Package scrape writes the merged exposition of a store snapshot: the
// gateway's own families and every group's, merged by name, in any
// exposition format (the protobuf text formats too), plain or
// gzip-compressed. It streams the bodies the store's families cache (each
// family's render.Cache: the body its push rendered, the text bodies
// scrapes cached), assembles gzip members from their cached DEFLATE
// segments, and holds the buffers and flate writers scrapes reuse.
package scrape

import (
	"io"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/internal/gzipcat"
	"github.com/pushgate/pushgate/internal/pipewrite"
	"github.com/pushgate/pushgate/store"
)

// Writer writes scrapes of store snapshots. It is safe for concurrent use,
// and one serves every scrape of a process: it holds the buffers and flate
// writers the scrapes reuse.
type Writer struct {
	// buffers holds the output buffers of scrapes (pipewrite.Writer) and
	// those cached text bodies are decoded into (writeTextBatches).
	buffers *pipewrite.Pool
	// compressors are the flate writers gzip scrapes reuse.
	compressors gzipcat.Compressors
	// gathers holds *gatherBuffers for scrapes.
	gathers sync.Pool
	// gzipCalm is set when the last gzip scrape found under calmShare of
	// its text new (changed since the gzip scrape before): the next one
	// may then build segments up to calmBudget (see segmentBudget).
	gzipCalm atomic.Bool
	// gzipAt is when the last gzip scrape started (Unix nanoseconds, 0
	// for none), and gzipEvery the time between the last two starts:
	// background precompression works only while gzip scrapes happen, on
	// bodies likely to outlive the next one (precompress.go).
	gzipAt, gzipEvery atomic.Int64
	// gzipRunning counts the gzip scrapes in progress: precompression
	// steps aside while there are any, since the scrape builds the
	// segments it needs itself and both would compress the same bodies.
	gzipRunning atomic.Int32
	// precompressed counts the text bytes Precompress compressed into
	// segments (PrecompressedBytes).
	precompressed atomic.Uint64
	// release hands the memory of dropped protobuf bytes back to the OS.
	release releaser
}

// PrecompressedBytes returns how many text bytes background precompression
// (Precompress) has compressed into gzip segments.
func (wr *Writer) PrecompressedBytes() uint64 { return wr.precompressed.Load() }

// NewWriter returns a Writer with nothing pooled yet.
func NewWriter() *Writer {
	return &Writer{
		// Three scrapes' worth of idle output buffers (a pipewrite.Writer
		// fills three in turn).
		buffers: pipewrite.NewPool(9),
		release: releaser{min: releaseMin, every: releaseEvery, free: debug.FreeOSMemory},
	}
}

// Write streams the merged exposition of sn in format f to w: own (the
// gateway's own metrics) and every stored family, merged by name, in name
// order, each name's samples contiguous under one HELP and TYPE. Within a
// name groups follow their grouping keys' order. HELP rule: a built-in
// family's HELP wins; otherwise the HELP of the first group (in
// grouping-key order) that has one, so the same store always scrapes the
// same way. A family that cannot be rendered in f is left out, logged and
// counted (store.Store.SkippedFamilies), so that the response stays whole
// and valid; an error means w failed (or stored bytes are corrupt), and the
// response is then cut short. It returns the bytes written to w.
func (wr *Writer) Write(w io.Writer, sn *store.Snapshot, f exposition.Format, own []*dto.MetricFamily) (int64, error) {
	dropProtobuf := false
	if !isProtoText(f) {
		// The protobuf text formats read no cache, and must not make
		// pushes render for them.
		dropProtobuf = sn.RenderState().StartScrape(f.Encoding())
	}
	out := pipewrite.NewWriter(w, wr.buffers)
	fw := &familyWriter{sn: sn, w: out, out: out, f: f, wr: wr, gather: wr.gatherBuffers(), dropProtobuf: dropProtobuf}
	defer wr.putGatherBuffers(fw.gather)
	err := fw.write(own)
	fw.reportSkipped()
	wr.release.dropped(fw.dropped, time.Now())
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return out.Written(), err
}

// write merges own and the snapshot's families into fw.
func (fw *familyWriter) write(own []*dto.MetricFamily) error {
	own = append([]*dto.MetricFamily(nil), own...)
	sort.Slice(own, func(i, j int) bool { return own[i].GetName() < own[j].GetName() })
	fw.own = own
	var (
		run     = fw.gather.run[:0]
		runName string
		err     error
	)
	defer func() { fw.gather.run = run }()
	flush := func() {
		if err != nil || len(run) == 0 {
			return
		}
		for len(own) > 0 && own[0].GetName() < runName {
			err = fw.writeOwn(own[0])
			own = own[1:]
			if err != nil {
				return
			}
		}
		var mine *dto.MetricFamily
		if len(own) > 0 && own[0].GetName() == runName {
			mine, own = own[0], own[1:]
		}
		err = fw.writeRun(runName, mine, run)
		run = run[:0]
	}
	fw.sn.Ascend(func(e store.Entry) bool {
		if name := e.Name(); name != runName {
			flush()
			runName = name
		}
		run = append(run, e)
		return err == nil
	})
	flush()
	for _, mf := range own {
		if err != nil {
			break
		}
		err = fw.writeOwn(mf)
	}
	if err == nil {
		fw.buf = exposition.AppendTrailer(fw.buf[:0], fw.f)
		_, err = fw.w.Write(fw.buf)
	}
	return err
}

// gatherBuffers are the slices a scrape gathers a merged family's entries
// and parts in, reused between scrapes: at 10,000 groups they grow to 1.7
// MB, and growing them afresh in every scrape started a GC cycle every ~20
// scrapes, 16% of a text scrape's CPU.
type gatherBuffers struct {
	run   []store.Entry
	parts []part
}

// gatherBuffers returns a scrape's gathering slices; give them back with
// putGatherBuffers.
func (wr *Writer) gatherBuffers() *gatherBuffers {
	if g, ok := wr.gathers.Get().(*gatherBuffers); ok {
		return g
	}
	return &gatherBuffers{}
}

// putGatherBuffers clears the slices, so that they keep no family alive,
// and keeps them for the next scrape.
func (wr *Writer) putGatherBuffers(g *gatherBuffers) {
	clear(g.run[:cap(g.run)])
	clear(g.parts[:cap(g.parts)])
	g.run, g.parts = g.run[:0], g.parts[:0]
	wr.gathers.Put(g)
}
