package store

import (
	"fmt"
	"io"

	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/internal/gzipcat"
	"github.com/pushgate/pushgate/internal/pipewrite"
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

// WriteGzipTo writes what WriteTo writes as one gzip member, and returns the
// number of compressed bytes written. f must be text or OpenMetrics.
//
// The member is assembled from per-family DEFLATE segments cached beside
// the families' text bodies and runs compressed on the spot. Segments go
// only to families that survived a scrape interval unchanged (seen by an
// earlier gzip scrape), and only segmentBudget bytes of them per scrape:
// a segment costs about 6x what streaming the same bytes costs, so building
// one for every family on the first scrape after a fill took 0.7 s at
// 10,000 groups, and for families that change between scrapes it is work
// thrown away. Everything else is streamed in runs, compressed at
// BestSpeed in chunks shared with a helper goroutine (gzipcat.Member; 90-96
// ms for all 78.7 MB at 10,000 groups), and a scrape of unchanged families
// compresses only the HELP/TYPE lines and the gateway's own metrics.
func (sn *Snapshot) WriteGzipTo(w io.Writer, f exposition.Format, own []*dto.MetricFamily) (int64, error) {
	if f.Encoding() == exposition.EncodingProtobuf {
		return 0, fmt.Errorf("gzip scrape from cached segments: %s has no segments", f)
	}
	rs := &sn.store.render
	rs.scraped(f.Encoding())
	out := pipewrite.NewWriter(w, rs.buffers)
	n, err := sn.writeGzip(out, f, own)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// writeGzip writes the gzip member of WriteGzipTo to out.
func (sn *Snapshot) writeGzip(out *pipewrite.Writer, f exposition.Format, own []*dto.MetricFamily) (int64, error) {
	rs := &sn.store.render
	gz, err := gzipcat.NewMember(out, &rs.compressors, sn.gzip.minRun)
	if err != nil {
		return out.Written(), err
	}
	defer gz.Release()
	fw := &familyWriter{sn: sn, w: gz, gz: gz, f: f, rs: rs, dropProtobuf: rs.protobufCached.Swap(false), gather: rs.gatherBuffers()}
	defer rs.putGatherBuffers(fw.gather)
	defer fw.reportSkipped()
	fw.sc.budget = sn.gzip.budget
	if rs.gzipCalm.Load() {
		fw.sc.budget = sn.gzip.calmBudget
	}
	fw.sc.segments.From = &rs.compressors
	defer fw.sc.segments.Release()
	err = sn.write(fw, own)
	if err == nil {
		err = gz.Close()
	}
	if err == nil {
		rs.gzipCalm.Store(fw.sc.newText <= int64(float64(fw.sc.allText)*calmShare))
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

// writeGzipText writes a plain family's cached body to a gzip scrape: as
// its segment if it has one, as a new segment if an earlier gzip scrape saw
// it and the budget allows, else streamed into the current run (and marked
// as seen, so that it gets a segment if it is still there next time).
func (fw *familyWriter) writeGzipText(f *Family, tb *textBody) error {
	fw.sc.allText += int64(tb.size)
	absorb := fw.gz.Absorbs()
	if tb.segment.Deflate == nil && !absorb && tb.gzipSeen.Load() && tb.size <= fw.sc.budget {
		fw.sc.budget -= tb.size
		var err error
		if tb, err = f.withSegment(tb, &fw.sc); err != nil {
			return err
		}
	}
	if tb.segment.Deflate != nil && !absorb {
		return fw.gz.WriteSegment(tb.segment)
	}
	if tb.segment.Deflate == nil && !tb.gzipSeen.Load() {
		tb.gzipSeen.Store(true)
		fw.sc.newText += int64(tb.size)
	}
	body, err := tb.decode(f, &fw.sc)
	if err != nil {
		return err
	}
	_, err = fw.gz.Write(body)
	return err
}
