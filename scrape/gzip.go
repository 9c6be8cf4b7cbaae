package scrape

import (
	"fmt"
	"io"
	"time"

	"github.com/klauspost/compress/s2"
	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/internal/gzipcat"
	"github.com/pushgate/pushgate/internal/pipewrite"
	"github.com/pushgate/pushgate/render"
	"github.com/pushgate/pushgate/store"
)

// gzipLimits bound how a gzip scrape splits its work between cached
// segments and streamed runs.
type gzipLimits struct {
	// budget is the text bytes one scrape may compress into new segments
	// while the store churns; calmBudget when it does not.
	budget, calmBudget int
	// minRun is the length a streamed run reaches before a cached segment
	// may end it.
	minRun int
}

// WriteGzip writes what Write writes as one gzip member, and returns the
// number of compressed bytes written. f must be text or OpenMetrics.
//
// The member is assembled from per-family DEFLATE segments cached beside
// the families' text bodies (render.TextBody) and runs compressed on the
// spot. Segments go only to families that survived a scrape interval
// unchanged (seen by an earlier gzip scrape), and only segmentBudget bytes
// of them per scrape: a segment costs about 6x what streaming the same
// bytes costs, so building one for every family on the first scrape after
// a fill took 0.7 s at 10,000 groups, and for families that change between
// scrapes it is work thrown away. Everything else is streamed in runs,
// compressed at BestSpeed in chunks shared with a helper goroutine
// (gzipcat.Member; 90-96 ms for all 78.7 MB at 10,000 groups), and a
// scrape of unchanged families compresses only the HELP/TYPE lines and the
// gateway's own metrics.
func (wr *Writer) WriteGzip(w io.Writer, sn *store.Snapshot, f exposition.Format, own []*dto.MetricFamily) (int64, error) {
	return wr.writeGzip(w, sn, f, own, gzipLimits{budget: segmentBudget, calmBudget: calmBudget, minRun: gzipcat.MinRun})
}

// writeGzip is WriteGzip under limits (tests shrink them).
func (wr *Writer) writeGzip(w io.Writer, sn *store.Snapshot, f exposition.Format, own []*dto.MetricFamily, limits gzipLimits) (int64, error) {
	if enc := f.Encoding(); enc != exposition.EncodingText && enc != exposition.EncodingOpenMetrics {
		return 0, fmt.Errorf("gzip scrape from cached segments: %s has no segments", f)
	}
	wr.noteGzipScrape(time.Now())
	wr.gzipRunning.Add(1)
	defer wr.gzipRunning.Add(-1)
	dropProtobuf := sn.RenderState().StartScrape(f.Encoding())
	out := pipewrite.NewWriter(w, wr.buffers)
	n, err := wr.writeMember(out, sn, f, own, dropProtobuf, limits)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// writeMember writes the gzip member of writeGzip to out.
func (wr *Writer) writeMember(out *pipewrite.Writer, sn *store.Snapshot, f exposition.Format, own []*dto.MetricFamily, dropProtobuf bool, limits gzipLimits) (int64, error) {
	gz, err := gzipcat.NewMember(out, &wr.compressors, limits.minRun)
	if err != nil {
		return out.Written(), err
	}
	defer gz.Release()
	fw := &familyWriter{sn: sn, w: gz, gz: gz, f: f, wr: wr, dropProtobuf: dropProtobuf, gather: wr.gatherBuffers()}
	defer wr.putGatherBuffers(fw.gather)
	defer fw.reportSkipped()
	fw.sc.budget = limits.budget
	if wr.gzipCalm.Load() {
		fw.sc.budget = limits.calmBudget
	}
	fw.sc.segments.From = &wr.compressors
	defer fw.sc.segments.Release()
	err = fw.write(own)
	wr.release.dropped(fw.dropped, time.Now())
	if err == nil {
		err = gz.Close()
	}
	if err == nil {
		wr.gzipCalm.Store(fw.sc.newText <= int64(float64(fw.sc.allText)*calmShare))
	}
	return out.Written(), err
}

// segmentBudget is the text bytes one gzip scrape may compress into new
// segments, so that no scrape spikes: the rest is streamed, and later
// scrapes build the remaining segments. Measured at 10,000 groups (78.7 MB
// of text; BenchmarkScrape, and curl against the built binary): the first
// gzip scrape after a fill streams everything, 130-190 ms (142 ms over
// HTTP); the second builds 8 MiB of segments, 250-360 ms (218 ms over
// HTTP, 1.5x); later ones shrink by ~8 MiB of streaming each and reach the
// cached 18-20 ms after ~12 scrapes. A larger budget converges in fewer
// scrapes but each costs more: a segment costs ~6x streaming the same
// bytes (94 MB/s against ~560 MB/s), so every MiB adds ~9 ms.
const segmentBudget = 8 << 20

// calmBudget is the segment budget of a gzip scrape after one that found
// under calmShare of its text changed since the gzip scrape before it: the
// store is not churning, so segments built now will be reused, and the
// cache should fill at once rather than over a dozen scrapes. At ~94 MB/s
// it bounds the extra work of one scrape to about a second (10,000 groups,
// 78.7 MB of text, fit in one; 100,000 groups take about eight scrapes),
// far below Prometheus' default 10 s scrape timeout.
const calmBudget = 96 << 20

// calmShare is the share of a gzip scrape's text, new since the previous
// gzip scrape, under which the store counts as calm.
const calmShare = 0.10

// scratch holds the buffers a scrape renders and decodes into, reused
// across its families, and a gzip scrape's accounting.
type scratch struct {
	render.Scratch
	// text is the buffer cached bodies are decoded into.
	text []byte
	// segments compresses family segments with a flate writer taken from
	// the Writer's pool at the first segment a scrape has to build, so a
	// scrape of cached families uses none.
	segments gzipcat.Segmenter
	// budget is the text bytes this scrape may still compress into new
	// segments.
	budget int
	// allText and newText count the text bytes a gzip scrape wrote, and
	// those of bodies no earlier gzip scrape had seen.
	allText, newText int64
}

// writeGzipText writes a plain family's cached body to a gzip scrape: as
// its segment if it has one, as a new segment if an earlier gzip scrape saw
// it and the budget allows, else streamed into the current run (and marked
// as seen, so that it gets a segment if it is still there next time).
func (fw *familyWriter) writeGzipText(f *store.Family, tb *render.TextBody) error {
	fw.sc.allText += int64(tb.Size())
	absorb := fw.gz.Absorbs()
	if tb.Segment().Deflate == nil && !absorb && tb.GzipSeen() && tb.Size() <= fw.sc.budget {
		fw.sc.budget -= tb.Size()
		var err error
		if tb, err = fw.sc.withSegment(f, tb); err != nil {
			return err
		}
	}
	if seg := tb.Segment(); seg.Deflate != nil && !absorb {
		return fw.gz.WriteSegment(seg)
	}
	if tb.Segment().Deflate == nil && !tb.GzipSeen() {
		tb.MarkGzipSeen()
		fw.sc.newText += int64(tb.Size())
	}
	body, err := fw.sc.decode(f, tb)
	if err != nil {
		return err
	}
	_, err = fw.gz.Write(body)
	return err
}

// withSegment returns tb, a cached body of f, with its deflate segment,
// compressing it and caching it in f first if need be.
func (sc *scratch) withSegment(f *store.Family, tb *render.TextBody) (*render.TextBody, error) {
	if tb.Segment().Deflate != nil {
		return tb, nil
	}
	body, err := sc.decode(f, tb)
	if err != nil {
		return nil, err
	}
	seg, err := sc.segments.Segment(body)
	if err != nil {
		return nil, fmt.Errorf("compress cached body of %q: %w", f.Name(), err)
	}
	return f.Cache().CacheSegment(tb, seg), nil
}

// decode returns tb, a cached body of f, as text, in the text buffer.
func (sc *scratch) decode(f *store.Family, tb *render.TextBody) ([]byte, error) {
	if cap(sc.text) < tb.Size() {
		sc.text = make([]byte, tb.Size())
	}
	b, err := s2.Decode(sc.text[:cap(sc.text)], tb.Packed())
	if err != nil {
		return nil, fmt.Errorf("decompress cached body of %q: %w", f.Name(), err)
	}
	return b, nil
}
