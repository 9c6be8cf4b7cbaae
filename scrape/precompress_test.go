package scrape

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/store"
)

// precompressorOf returns a precompressor of s with an unbounded budget.
func precompressorOf(s *testStore) *precompressor {
	p := newPrecompressor(s.w, func() *store.Store { return s.Store }, 1)
	p.budget = time.Hour
	return p
}

// pushedWithPrecompressor returns a store of groups groups of the bench
// payload pushed at at, and a precompressor of it with an unbounded budget.
func pushedWithPrecompressor(t *testing.T, groups int, at time.Time) (*testStore, *precompressor) {
	t.Helper()
	s := newStore(store.Options{})
	pushPayload(t, s, groups, 0, at)
	return s, precompressorOf(s)
}

// scrapedWithPrecompressor is pushedWithPrecompressor after one gzip
// scrape.
func scrapedWithPrecompressor(t *testing.T, groups int, at time.Time) (*testStore, *precompressor) {
	t.Helper()
	s, p := pushedWithPrecompressor(t, groups, at)
	checkedGzipScrape(t, s, exposition.NewFormat(exposition.EncodingText), ownFamilies(), defaultLimits())
	return s, p
}

// TestPrecompressionWaitsForAGzipScrapeThenCompressesEveryOldBody checks
// that passes do nothing before any gzip scrape, then give every plain
// family a segment, which the next gzip scrape sends: it decodes to the
// plain scrape and finds nothing new, so the store counts as calm.
func TestPrecompressionWaitsForAGzipScrapeThenCompressesEveryOldBody(t *testing.T) {
	now := time.Now()
	s, p := pushedWithPrecompressor(t, 30, now.Add(-time.Hour))
	p.pass(now)
	if _, with, _ := segmentState(s); with != 0 || p.segments != 0 {
		t.Fatalf("before any gzip scrape a pass built %d segments (%d families with one), want none", p.segments, with)
	}
	text := exposition.NewFormat(exposition.EncodingText)
	checkedGzipScrape(t, s, text, ownFamilies(), defaultLimits())
	if _, with, _ := segmentState(s); with != 0 {
		t.Fatalf("the first gzip scrape built %d segments, want none", with)
	}
	p.pass(time.Now())
	_, with, without := segmentState(s)
	if without != 0 || with == 0 || p.segments != int64(with) {
		t.Fatalf("after a pass %d families have a segment and %d none (pass built %d), want all of them", with, without, p.segments)
	}
	if !p.idle {
		t.Error("a round that left nothing to do did not go idle")
	}
	s.w.gzipCalm.Store(false)
	checkedGzipScrape(t, s, text, ownFamilies(), defaultLimits())
	if !s.w.gzipCalm.Load() {
		t.Error("the gzip scrape after precompression found text it had to compress anew")
	}
}

// TestPrecompressionLeavesYoungBodiesForLater checks that a body younger
// than half the gzip scrape interval (at least minBodyAge) waits, that the
// round then does not go idle, and that a later pass compresses it.
func TestPrecompressionLeavesYoungBodiesForLater(t *testing.T) {
	now := time.Now()
	s, p := scrapedWithPrecompressor(t, 10, now.Add(-time.Hour))
	k := groupkey.New(map[string]string{"job": "young"})
	mustPush(t, s, k, store.Replace, "young_total 1\n", now)
	p.pass(now)
	if textOf(familyOf(t, s, k, "young_total")).deflate != nil {
		t.Fatal("a body pushed at the pass's time was compressed")
	}
	if _, _, without := segmentState(s); without != 2 {
		t.Fatalf("%d families without a segment, want the young group's 2 (its family and its push time; its failure time was never pushed)", without)
	}
	if p.idle {
		t.Fatal("a round that left a young body went idle")
	}
	p.pass(now.Add(minBodyAge))
	if _, _, without := segmentState(s); without != 0 || !p.idle {
		t.Fatalf("%d families left without a segment once old enough (idle %v)", without, p.idle)
	}
}

// TestPrecompressionResumesWhereItsBudgetEnded checks that passes with no
// budget each build one segment and the next resumes after it, that an
// idle precompressor does nothing until the store changes, and that it
// stops once gzip scrapes stop.
func TestPrecompressionResumesWhereItsBudgetEnded(t *testing.T) {
	now := time.Now()
	s, p := scrapedWithPrecompressor(t, 5, now.Add(-time.Hour))
	_, _, families := segmentState(s)
	p.budget = 0
	passes := 0
	for !p.idle {
		if passes > families+1 {
			t.Fatalf("no idle round after %d passes over %d families", passes, families)
		}
		before := p.segments
		p.pass(now)
		passes++
		if p.segments != before+1 && !p.idle {
			t.Fatalf("pass %d built %d segments, want one", passes, p.segments-before)
		}
	}
	if _, _, without := segmentState(s); without != 0 || p.segments != int64(families) {
		t.Fatalf("%d passes built %d segments and left %d families without one; want %d built", passes, p.segments, without, families)
	}
	p.budget = time.Hour
	p.pass(now)
	if p.segments != int64(families) {
		t.Fatalf("an idle pass over an unchanged store built %d segments", p.segments-int64(families))
	}
	// One group of five changes: more than calmShare of them, so the pass
	// right after waits, and one an interval (minBodyAge) later works.
	pushPayload(t, s, 1, 1, now.Add(-time.Minute))
	p.pass(now.Add(time.Millisecond))
	if _, _, without := segmentState(s); without == 0 || p.segments != int64(families) {
		t.Fatalf("a pass while the store churned built %d segments", p.segments-int64(families))
	}
	p.pass(now.Add(minBodyAge + time.Millisecond))
	if _, _, without := segmentState(s); without != 0 {
		t.Fatalf("the pass once the store was calm left %d families without a segment", without)
	}
	built := p.segments
	pushPayload(t, s, 1, 2, now.Add(-time.Minute))
	p.pass(now.Add(precompressActive + time.Minute))
	if p.segments != built {
		t.Fatal("a pass long after the last gzip scrape built segments")
	}
}

// TestPrecompressionWaitsWhileTheStoreChurns checks that passes within
// half an interval between gzip scrapes of many groups changing build
// nothing, and that one after that compresses them all.
func TestPrecompressionWaitsWhileTheStoreChurns(t *testing.T) {
	now := time.Now()
	s, p := scrapedWithPrecompressor(t, 20, now.Add(-time.Hour))
	p.pass(now)
	built := p.segments
	// Two gzip scrapes 8 s apart: the store must have been calm for 4 s,
	// and bodies must be 4 s old.
	s.w.gzipEvery.Store(int64(8 * time.Second))
	pushPayload(t, s, 3, 1, now.Add(-time.Minute))
	p.pass(now.Add(time.Second))
	if _, _, without := segmentState(s); without == 0 || p.segments != built {
		t.Fatalf("a pass a second after 3 of 20 groups changed built %d segments", p.segments-built)
	}
	p.pass(now.Add(3 * time.Second))
	if p.segments != built {
		t.Fatal("a pass within half an interval of the pass that saw the churn built segments")
	}
	// Half an interval after the pass that first saw the changes.
	p.pass(now.Add(5*time.Second + time.Millisecond))
	if _, _, without := segmentState(s); without != 0 {
		t.Fatalf("the pass half an interval after the churn left %d families without a segment", without)
	}
}

// TestPrecompressionBesidePushesAndScrapes runs passes on one goroutine
// while another pushes and a third takes gzip and plain scrapes of one
// snapshot each: every gzip scrape must still decode to its plain scrape
// (run under -race, this also checks the cache's atomics).
func TestPrecompressionBesidePushesAndScrapes(t *testing.T) {
	now := time.Now()
	s, p := scrapedWithPrecompressor(t, 20, now.Add(-time.Hour))
	text := exposition.NewFormat(exposition.EncodingText)
	done := make(chan struct{})
	passes := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-done:
				passes <- n
				return
			default:
			}
			// Each pass a few seconds later, so that the store has
			// settled by the next and bodies are old enough; the
			// passes run back to back (hundreds of thousands on a
			// fast run), and the clock stops at the hundredth, so
			// that it stays within precompressActive of the gzip
			// scrapes.
			p.pass(now.Add(time.Duration(min(n, 100)) * 3 * time.Second))
			n++
		}
	}()
	pushed := make(chan error, 1)
	go func() {
		ctx := context.Background()
		for seq := 1; seq <= 20; seq++ {
			for i := range 5 {
				k := groupkey.New(map[string]string{"job": "bench", "instance": fmt.Sprintf("i%d", i)})
				if _, err := s.Push(ctx, store.Push{Key: k, Method: store.Replace, Families: payload.Families(i, seq), Time: now.Add(-time.Minute)}); err != nil {
					pushed <- err
					return
				}
			}
		}
		pushed <- nil
	}()
	for i := 0; i < 20; i++ {
		checkedGzipScrape(t, s, text, ownFamilies(), defaultLimits())
	}
	if err := <-pushed; err != nil {
		t.Fatal(err)
	}
	close(done)
	n := <-passes
	if n == 0 {
		t.Fatal("no pass ran beside the scrapes")
	}
	// Passes step aside while a gzip scrape runs, which here is often, and
	// on a loaded machine few may have run: two more, alone, finish the
	// work before the last check (the first may only see the last pushes'
	// bodies, the second finds them settled and old enough).
	last := min(n, 100)
	p.pass(now.Add(time.Duration(last+1) * 3 * time.Second))
	p.pass(now.Add(time.Duration(last+3) * 3 * time.Second))
	checkedGzipScrape(t, s, text, ownFamilies(), defaultLimits())
	if p.segments == 0 {
		t.Fatalf("the passes built no segment after %d passes: the test proves nothing", n)
	}
}

// TestPrecompressionKnowsTheChurnBeforeTheFirstGzipScrape checks that
// passes follow the store's changes before any gzip scrape, so that the
// first pass after one does not mistake a wave of pushes for calm.
func TestPrecompressionKnowsTheChurnBeforeTheFirstGzipScrape(t *testing.T) {
	now := time.Now()
	s, p := pushedWithPrecompressor(t, 10, now.Add(-time.Hour))
	p.pass(now)
	pushPayload(t, s, 10, 1, now.Add(-time.Hour))
	checkedGzipScrape(t, s, exposition.NewFormat(exposition.EncodingText), ownFamilies(), defaultLimits())
	p.pass(now.Add(300 * time.Millisecond))
	if p.segments != 0 {
		t.Fatalf("the first pass after a gzip scrape, 300 ms after every group changed, built %d segments", p.segments)
	}
	p.pass(now.Add(1400 * time.Millisecond))
	if _, _, without := segmentState(s); without != 0 {
		t.Fatalf("a pass once the store had settled left %d families without a segment", without)
	}
}

// TestPrecompressionStepsAsideDuringAGzipScrape checks that a pass does
// nothing while a gzip scrape is in progress: the scrape builds the
// segments it needs, and both would compress the same bodies.
func TestPrecompressionStepsAsideDuringAGzipScrape(t *testing.T) {
	now := time.Now()
	s, p := scrapedWithPrecompressor(t, 5, now.Add(-time.Hour))
	s.w.gzipRunning.Add(1)
	p.pass(now)
	if p.segments != 0 {
		t.Fatalf("a pass during a gzip scrape built %d segments", p.segments)
	}
	s.w.gzipRunning.Add(-1)
	p.pass(now.Add(time.Millisecond))
	if _, _, without := segmentState(s); without != 0 {
		t.Fatalf("the pass after the gzip scrape left %d families without a segment", without)
	}
}
