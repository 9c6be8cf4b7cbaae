package render

import (
	"log/slog"
	"sync/atomic"

	"github.com/pushgate/pushgate/exposition"
)

// State is what pushes and scrapes of one store share about rendering: the
// text encoding pushes render for, whether scrapes left protobuf bytes in
// the families' caches, and the count of families scrapes left out. The
// zero value is ready to use and logs nothing (SetLogger).
type State struct {
	// enc is the text encoding last scraped (an exposition.Encoding; the
	// zero value is text 0.0.4). Pushes render their families' bodies in
	// it, so that a scrape of unchanged data only copies bytes (DESIGN §6).
	enc atomic.Int32
	// protobufCached is set by protobuf scrapes, which keep the families'
	// decompressed protobuf bytes, and cleared by the text scrape that drops
	// them, so that other text scrapes do not visit every family to check.
	protobufCached atomic.Bool
	// skipped counts the families scrapes left out because they could not
	// be rendered in the scrape's format (Skipped).
	skipped atomic.Uint64
	logger  *slog.Logger
}

// SetLogger makes ReportSkipped log to l. Call it before the state is
// shared.
func (st *State) SetLogger(l *slog.Logger) { st.logger = l }

// Encoding returns the encoding pushes render text bodies in (Cache.Fill).
func (st *State) Encoding() exposition.Encoding {
	return exposition.Encoding(st.enc.Load())
}

// StartScrape records that a scrape in enc starts, so that later pushes
// render for it (DESIGN §6), and reports whether it must drop the
// families' cached protobuf bytes as it passes them (Cache.DropProtobuf):
// a text scrape after a protobuf one. Protobuf scrapes leave the encoding
// alone: their bodies are the stored bytes.
func (st *State) StartScrape(enc exposition.Encoding) (dropProtobuf bool) {
	if enc == exposition.EncodingProtobuf {
		st.protobufCached.Store(true)
		return false
	}
	if st.Encoding() != enc {
		st.enc.Store(int32(enc))
	}
	return st.protobufCached.Swap(false)
}

// ReportSkipped counts n families a scrape in f left out because they could
// not be rendered in f (Skipped), and logs it in one line with the first
// one's error.
func (st *State) ReportSkipped(f exposition.Format, n int, first error) {
	if n == 0 {
		return
	}
	st.skipped.Add(uint64(n))
	if st.logger != nil {
		st.logger.Error("families left out of a scrape: they cannot be rendered in its format",
			"format", f.ContentType(), "families", n, "first_err", first)
	}
}

// Skipped returns how many times a scrape left a family out because it
// could not be rendered in the scrape's format (ReportSkipped).
func (st *State) Skipped() uint64 { return st.skipped.Load() }
