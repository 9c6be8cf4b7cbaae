package render

import (
	"log/slog"
	"sync/atomic"
	"time"

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
	// scraped is set by the first scrape of any format, and textAt holds
	// when the last text or OpenMetrics scrape started (Unix nanoseconds,
	// 0 for never): see RenderText.
	scraped atomic.Bool
	textAt  atomic.Int64
	// textScrapes counts the text and OpenMetrics scrapes started
	// (TextScrapes).
	textScrapes atomic.Uint64
	logger      *slog.Logger
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
	if !st.scraped.Load() {
		st.scraped.Store(true)
	}
	if enc == exposition.EncodingProtobuf {
		st.protobufCached.Store(true)
		return false
	}
	if st.Encoding() != enc {
		st.enc.Store(int32(enc))
	}
	st.textAt.Store(time.Now().UnixNano())
	st.textScrapes.Add(1)
	return st.protobufCached.Swap(false)
}

// TextScrapes returns how many text and OpenMetrics scrapes have started:
// a push that finds the count grew since the group's previous push knows
// that a scrape may have read the bodies that push rendered.
func (st *State) TextScrapes() uint64 { return st.textScrapes.Load() }

// TextWindow is how long after the last text or OpenMetrics scrape pushes
// go on rendering text bodies (RenderText): longer than any scrape
// interval Prometheus is run with, so that a gateway scraped in text by
// one server and in protobuf by another keeps them.
const TextWindow = 10 * time.Minute

// RenderText reports whether a push at now renders its families' text
// bodies (Cache.Fill): unless scrapes happen and none of them in the last
// TextWindow read text. A gateway that Prometheus scrapes only with
// protobuf (as its native-histogram setups do) then spends nothing on
// bodies no scrape reads. Measured at 10,000 groups of the bench payload,
// keep-alive PUTs by 8 clients after a protobuf scrape, 5 alternating
// runs: 234-269 us of CPU per push against 283-307 us when every push
// rendered, and RSS after a protobuf scrape 160 MiB against 181-182 MiB.
// A text scrape after such pushes renders their bodies from the protobuf
// bytes once (Cache.Text: 702-757 ms for that first scrape, against
// 134-173 ms, before scrapes rendered on a second goroutine: see
// scrape's prerenderer), with the same bytes, and pushes render again from
// then on.
// A gateway not scraped yet renders, so that its first scrape copies
// bodies.
func (st *State) RenderText(now time.Time) bool {
	if !st.scraped.Load() {
		return true
	}
	at := st.textAt.Load()
	return at != 0 && now.UnixNano()-at < int64(TextWindow)
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
