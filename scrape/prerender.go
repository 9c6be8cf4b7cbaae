package scrape

import (
	"sync/atomic"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/render"
	"github.com/pushgate/pushgate/store"
)

// prerenderMin is the fewest families left in a run for which a scrape
// starts a prerenderer: below it, starting one costs more than it saves.
const prerenderMin = 64

// prerenderer renders, on a goroutine of its own, the text bodies a scrape
// will need that no cache holds, walking its run from the end while the
// scrape walks it from the start, so that both cores render. A scrape
// starts one at the first family of a run it has to render (families a
// push left unrendered because no scrape read the last push's, restored
// and applied families, another encoding than pushes render), so a scrape
// of cached bodies starts none. It renders through the family's cache
// (render.Cache.Text), which keeps the body, so the scrape finds it there;
// where both reach one family, both render it and the cache keeps one of
// two equal bodies.
//
// Measured on the built binary at 10,000 groups of the bench payload, the
// first text scrape after a restart from the journal (every family to
// render; 3 alternating runs): 479-519 ms against 825-841 ms without it
// (and 1.92-1.94 s before stored families were rendered through the
// pooled reader). After 10 s of pushes no scrape read (5 alternating runs):
// 462-699 ms against 699-830 ms. BenchmarkScrape "text repushed" (1,000
// of the 10,000 groups to render, in process): 140 against 155 ms, within
// the noise (p=0.12, 10 runs). Scrapes of cached bodies start none.
type prerenderer struct {
	run []store.Entry
	enc exposition.Encoding
	sc  *render.Scratch
	// next is the index the scrape gathers next: the prerenderer stops
	// before it.
	next atomic.Int64
	stop atomic.Bool
	done chan struct{}
}

// startPrerender starts a prerenderer over run in enc, the scrape being at
// index at, rendering into sc (which it must not share until wait returns).
func startPrerender(run []store.Entry, at int, enc exposition.Encoding, sc *render.Scratch) *prerenderer {
	p := &prerenderer{run: run, enc: enc, sc: sc, done: make(chan struct{})}
	p.next.Store(int64(at))
	go p.work()
	return p
}

// work renders from the end of the run down to the scrape's position.
func (p *prerenderer) work() {
	defer close(p.done)
	for i := len(p.run) - 1; i > int(p.next.Load()) && !p.stop.Load(); i-- {
		f := p.run[i].Family()
		c := f.Cache()
		if !c.Plain() || c.HasText(p.enc) {
			continue
		}
		// An error is the scrape's to report, when it reaches the family.
		_, _ = c.Text(f, p.enc, p.sc)
	}
}

// reached records that the scrape gathers index i next.
func (p *prerenderer) reached(i int) { p.next.Store(int64(i)) }

// wait stops the prerenderer and waits for it: the run's families must not
// be read once the scrape's snapshot is released.
func (p *prerenderer) wait() {
	p.stop.Store(true)
	<-p.done
}
