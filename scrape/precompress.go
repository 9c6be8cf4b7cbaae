package scrape

import (
	"context"
	"time"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/store"
)

// Background precompression builds, between gzip scrapes, the DEFLATE
// segments that the next gzip scrape would otherwise have to compress on
// the spot. Without it, the first gzip scrape after many groups changed
// streams all their text (90-96 ms at 10,000 groups, 78.7 MB), the next
// ones build at most segmentBudget bytes of segments each, and a scrape
// gets back to the cached 18-20 ms only after several scrape intervals.
// Segments cost about 6x streaming the same bytes, so they are built only
// for bodies likely to be sent more than once: only while gzip scrapes
// happen at all, and only once the store has settled: for half the time
// between gzip scrapes (at least minBodyAge), fewer groups changed than
// calmShare of them (the share under which a gzip scrape counts the store
// as calm), and the body is older than that. Without the calm rule, 8 clients
// pushing to 10,000 groups (each group every ~2 s) while gzip was scraped
// every second lost 13% of their push rate (4,040 against 4,660 pushes/s,
// three alternating runs each) to segments thrown away before any scrape
// sent them.
const (
	// precompressEvery is how often a pass starts.
	precompressEvery = 250 * time.Millisecond
	// precompressActive is how long after the last gzip scrape passes go
	// on: a gateway no longer scraped with gzip stops spending on
	// segments.
	precompressActive = 10 * time.Minute
	// precompressChunk is the most entries one snapshot is held for: while
	// a snapshot is open, pushes defer their slot updates.
	precompressChunk = 2048
	// minBodyAge and maxBodyAge bound how long the store must have been
	// calm, and a body unchanged, before it is precompressed (half the
	// time between the last two gzip scrapes).
	minBodyAge = time.Second
	maxBodyAge = time.Minute
)

// Precompress builds, until ctx is done, the DEFLATE segments of the text
// bodies that gzip scrapes of current() send, in the background, using at
// most cpu (0 to 1) of one core: every precompressEvery it works for at
// most cpu times that long. It does nothing while no gzip scrape happened
// in the last precompressActive or while the store churns, and nothing for
// bodies that changed since (see above). cpu 0 returns at once.
//
// A segment is derived from the body of a served (committed) family and
// cached beside it (render.Cache.CacheSegment), exactly as a gzip scrape
// would cache it: what scrapes send does not change, only when the
// compressing is done.
func (wr *Writer) Precompress(ctx context.Context, current func() *store.Store, cpu float64) {
	if cpu <= 0 {
		return
	}
	p := newPrecompressor(wr, current, cpu)
	t := time.NewTicker(precompressEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.pass(time.Now())
		}
	}
}

// noteGzipScrape records that a gzip scrape starts at now.
func (wr *Writer) noteGzipScrape(now time.Time) {
	at := now.UnixNano()
	if prev := wr.gzipAt.Swap(at); prev != 0 && at > prev {
		wr.gzipEvery.Store(at - prev)
	}
}

// precompressor is the state of Precompress between passes: where in the
// scrape order the current round is, and whether the last round found
// nothing left to do.
type precompressor struct {
	wr      *Writer
	current func() *store.Store
	// budget is how long one pass may work.
	budget time.Duration
	// st is the store the round walks; a new current store starts a new
	// round.
	st *store.Store
	// name and gid are the last entry the round visited; atStart is set
	// when the next pass starts a new round.
	name, gid string
	atStart   bool
	// roundFrom is st.Published() when the round started; young is set
	// when the round left a body because it was too young.
	roundFrom uint64
	young     bool
	// idle is set when a round finished with nothing left to compress, at
	// st.Published() == idleAt: passes then do nothing until it changes.
	idle   bool
	idleAt uint64
	// restUntil is when the next round may start after one that left
	// young bodies: walking the whole store again every pass for them
	// would cost a few percent of a core for nothing.
	restUntil time.Time
	// history holds st.Published() at recent passes, oldest first, to
	// tell how many groups changed within the settle time (churning).
	history []published
	sc      scratch
	// segments counts the segments built (the Writer counts their text
	// bytes, PrecompressedBytes).
	segments int64
}

// published is the count of changes of a store's served state at a time.
type published struct {
	at    time.Time
	count uint64
}

// newPrecompressor returns the state of a Precompress loop that works
// cpu of each precompressEvery.
func newPrecompressor(wr *Writer, current func() *store.Store, cpu float64) *precompressor {
	return &precompressor{wr: wr, current: current, budget: time.Duration(float64(precompressEvery) * min(cpu, 1)), atStart: true}
}

// pass does one pass's work at now: it resumes the round where the last
// pass left it, builds the segments of old enough bodies that have none,
// and stops at the end of the scrape order or when its budget is spent.
func (p *precompressor) pass(now time.Time) {
	st := p.current()
	if st == nil {
		return
	}
	if st != p.st {
		p.st, p.atStart, p.idle, p.history = st, true, false, nil
	}
	// The churn is followed on every pass, so that the first pass after
	// a gzip scrape knows what happened before it.
	settle := min(max(time.Duration(p.wr.gzipEvery.Load())/2, minBodyAge), maxBodyAge)
	churning := p.churning(now, st, settle)
	if at := p.wr.gzipAt.Load(); at == 0 || now.Sub(time.Unix(0, at)) > precompressActive {
		return
	}
	if churning || p.wr.gzipRunning.Load() > 0 || p.idle && st.Published() == p.idleAt || p.atStart && now.Before(p.restUntil) {
		return
	}
	p.sc.segments.From = &p.wr.compressors
	defer p.sc.segments.Release()
	deadline := time.Now().Add(p.budget)
	for {
		if p.atStart {
			p.roundFrom, p.young, p.idle = st.Published(), false, false
		}
		sn := st.Snapshot()
		enc := sn.RenderState().Encoding()
		visited := 0
		outOfTime := false
		stopped := sn.AscendFrom(p.name, p.gid, func(e store.Entry) bool {
			if !p.atStart && e.Name() == p.name && e.GroupID() == p.gid {
				return true
			}
			p.name, p.gid, p.atStart = e.Name(), e.GroupID(), false
			visited++
			if p.precompress(e.Family(), enc, now, settle) || visited%256 == 0 {
				// A gzip scrape that starts meanwhile ends the pass too.
				outOfTime = time.Now().After(deadline) || p.wr.gzipRunning.Load() > 0
			}
			return !outOfTime && visited < precompressChunk
		})
		sn.Release()
		if !stopped {
			// The round reached the end of the scrape order.
			p.name, p.gid, p.atStart = "", "", true
			p.idle, p.idleAt = !p.young, p.roundFrom
			if p.young {
				p.restUntil = now.Add(max(settle/4, precompressEvery))
			}
			return
		}
		if outOfTime {
			return
		}
	}
}

// churning records st's count of changes at now and reports whether more
// than calmShare of its groups changed within settle before: segments
// built now would mostly be replaced before a scrape sent them.
func (p *precompressor) churning(now time.Time, st *store.Store, settle time.Duration) bool {
	count := st.Published()
	p.history = append(p.history, published{at: now, count: count})
	for len(p.history) > 1 && !p.history[1].at.After(now.Add(-settle)) {
		p.history = p.history[1:]
	}
	changed := count - p.history[0].count
	return changed > 0 && float64(changed) > calmShare*float64(st.Stats().Groups)
}

// precompress builds the segment of f's body in enc if f is plain, old
// enough at now and has none yet, and reports whether it did any work.
func (p *precompressor) precompress(f *store.Family, enc exposition.Encoding, now time.Time, minAge time.Duration) bool {
	c := f.Cache()
	if !c.Plain() {
		return false
	}
	if tb := c.CachedText(); tb != nil && tb.Encoding() == enc && tb.Segment().Deflate != nil {
		return false
	}
	if now.Sub(f.LastPush()) < minAge {
		p.young = true
		return false
	}
	tb, err := c.Text(f, enc, &p.sc.Scratch)
	if err != nil {
		// Not renderable in enc: scrapes leave it out too.
		return true
	}
	if tb.Segment().Deflate != nil {
		return true
	}
	if _, err := p.sc.withSegment(f, tb); err != nil {
		// A corrupt stored body: the scrape that meets it reports it.
		return true
	}
	p.segments++
	p.wr.precompressed.Add(uint64(tb.Size()))
	return true
}
