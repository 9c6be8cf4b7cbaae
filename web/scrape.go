package web

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/exposition"
)

// gzipWriters reuses compressors between gzip scrapes in protobuf or a
// protobuf text format (text and OpenMetrics gzip scrapes reuse the scrape
// Writer's flate writers); a gzip writer holds about a megabyte of state.
type gzipWriters struct{ pool sync.Pool }

func (g *gzipWriters) get(w io.Writer) *gzip.Writer {
	if zw, ok := g.pool.Get().(*gzip.Writer); ok {
		zw.Reset(w)
		return zw
	}
	// BestSpeed: scrapes are large and frequent; the ratio on exposition
	// text stays close to the default level's.
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	return zw
}

func (g *gzipWriters) put(zw *gzip.Writer) { g.pool.Put(zw) }

// scrape serves the merged exposition of the gateway's own metrics and every
// stored group in the negotiated format, gzip-compressed when accepted.
func (h *Handler) scrape(w http.ResponseWriter, r *http.Request) {
	own, err := h.registry.Gather()
	if err != nil {
		h.logger.Warn("gathering the gateway's own metrics", "err", err)
	}
	own = withEmptyOwnFamilies(own, h.ownFamilies)
	f := exposition.Negotiate(r.Header)
	snap := h.store().Snapshot()
	defer snap.Release()
	w.Header().Set("Content-Type", f.ContentType())
	w.Header().Add("Vary", "Accept, Accept-Encoding")
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	if !acceptsGzip(r.Header.Get("Accept-Encoding")) {
		if _, err := h.scrapes.Write(w, snap, f, own); err != nil {
			h.logger.Debug("scrape aborted", "err", err)
		}
		return
	}
	w.Header().Set("Content-Encoding", "gzip")
	if enc := f.Encoding(); enc == exposition.EncodingText || enc == exposition.EncodingOpenMetrics {
		// Text and OpenMetrics: families unchanged since the last gzip
		// scrape are copied as cached deflate segments, the rest is
		// streamed; gzipping the whole body per scrape cost ~190 ms of CPU
		// at 10,000 groups.
		if _, err := h.scrapes.WriteGzip(w, snap, f, own); err != nil {
			h.logger.Debug("scrape aborted", "err", err)
		}
		return
	}
	// Protobuf and the protobuf text formats: the whole body through one
	// pooled gzip writer.
	zw := h.gzip.get(w)
	if _, err := h.scrapes.Write(zw, snap, f, own); err != nil {
		h.logger.Debug("scrape aborted", "err", err)
		return
	}
	if err := zw.Close(); err != nil {
		h.logger.Debug("scrape aborted", "err", err)
	}
	h.gzip.put(zw)
}

// withEmptyOwnFamilies adds to a gather of the gateway's registry the own
// families it left out for having no sample yet (a vector before its first
// request). A family the gateway and some group share takes its HELP and
// TYPE from the gateway's family when there is one in the scrape, so without
// this a pushed family's HELP showed until the gateway's first sample of
// that name, and again after every restart.
func withEmptyOwnFamilies(gathered, declared []*dto.MetricFamily) []*dto.MetricFamily {
	out := gathered
	for _, d := range declared {
		found := false
		for _, g := range gathered {
			if g.GetName() == d.GetName() {
				found = true
				break
			}
		}
		if !found {
			if len(out) == len(gathered) {
				// Copy before appending: gathered may share its array.
				out = append(make([]*dto.MetricFamily, 0, len(gathered)+len(declared)), gathered...)
			}
			out = append(out, d)
		}
	}
	return out
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		if q, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if v, err := strconv.ParseFloat(q, 64); err == nil && v == 0 {
				return false
			}
		}
		return true
	}
	return false
}

// Precompress compresses, in the background and until ctx is done, the
// bodies the next gzip scrape of the current store will send, using at
// most cpu (0 to 1) of one core; 0 returns at once. See
// scrape.Writer.Precompress.
func (h *Handler) Precompress(ctx context.Context, cpu float64) {
	h.scrapes.Precompress(ctx, h.opts.CurrentStore, cpu)
}
