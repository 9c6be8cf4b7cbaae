package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/store"
)

// follow applies the log's batches to st, from the position st holds, until
// ctx ends or the log lost the history st needs (an error wrapping
// journal.ErrCompacted: st must be rebuilt). A Follow that fails otherwise
// is started again from where st is. The replica is ready while a Follow
// runs and has caught up with the log.
func (r *Replica) follow(ctx context.Context, st *store.Store) error {
	pause := newBackoff(r.cfg.Retry)
	for {
		fctx, cancel := context.WithCancel(ctx)
		gen := r.startFollow()
		var wg sync.WaitGroup
		wg.Go(func() { r.watchReadiness(fctx, st, gen) })
		started := time.Now()
		err := r.cfg.Log.Follow(fctx, st.Applied(), func(b journal.Batch) error { return r.apply(st, b) })
		cancel()
		if time.Since(started) > r.cfg.Retry {
			// A Follow that ran a while failed anew: retry soon.
			pause.reset()
		}
		wg.Wait()
		r.setReady(false)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, journal.ErrCompacted):
			return err
		}
		r.failed("following the log", err)
		if !pause.wait(ctx) {
			return ctx.Err()
		}
	}
}

// apply applies one batch to st: a batch this replica's log committed was
// published by the write that appended it, once committed (store.Push and
// the others), and is only marked applied here; any other goes through
// store.Apply. A batch st already holds is skipped.
func (r *Replica) apply(st *store.Store, b journal.Batch) error {
	if b.Position <= st.Applied() {
		return nil
	}
	if b.Own {
		st.MarkApplied(b.Position)
	} else if err := st.Apply(b.Position, b.Ops); err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	r.notifyApplied()
	return nil
}

// startFollow counts a new Follow and returns its number.
func (r *Replica) startFollow() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.followGen++
	return r.followGen
}

// watchReadiness makes the replica ready once st is current (see
// readyWhenCurrent), and keeps it ready only while it can tell: every
// probeInterval it reads the log's latest commit from a quorum, and a probe
// that st had applied confirms it current as of the time the probe was
// asked. A replica that has gone StaleAfter without such a confirmation
// (its watch stalled behind new commits, a hung member, a lost quorum), or
// that was paused itself (SIGSTOP, a frozen VM) for half of that, is not
// ready until readyWhenCurrent confirms it afresh: a replica resumed after
// a freeze serves nothing as ready before it caught up. It returns when
// Follow number gen ends (ctx).
func (r *Replica) watchReadiness(ctx context.Context, st *store.Store, gen uint64) {
	check := min(100*time.Millisecond, r.cfg.StaleAfter/4)
	probeEvery := min(probeInterval, r.cfg.StaleAfter/4)
	for {
		r.readyWhenCurrent(ctx, st, gen)
		if ctx.Err() != nil {
			return
		}
		confirmed := time.Unix(0, r.confirmed.Load())
		t := time.NewTicker(check)
		last, probed := time.Now(), time.Time{}
		var why string
		for why == "" {
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
				// The clock, not the tick's time: a tick buffered while a
				// slow probe ran is old.
				now := time.Now()
				if gap := now.Sub(last); gap > r.cfg.StaleAfter/2 {
					why = fmt.Sprintf("this process was paused for %s", gap.Round(time.Millisecond))
					break
				}
				if now.Sub(probed) >= probeEvery {
					probed = now
					if r.probe(ctx, st) {
						confirmed = now
						r.confirmed.Store(confirmed.UnixNano())
					}
				}
				if time.Since(confirmed) > r.cfg.StaleAfter {
					why = fmt.Sprintf("not confirmed current for %s", r.cfg.StaleAfter)
				}
				// A slow probe (a member that hangs) is not a pause of
				// this process.
				last = time.Now()
			}
		}
		t.Stop()
		r.logger.Warn("not ready until this replica has confirmed it is current", "reason", why)
		r.setReady(false)
	}
}

// probeInterval is how often a ready replica confirms it is current.
const probeInterval = 500 * time.Millisecond

// probe reads the log's latest commit from a quorum, within half of
// StaleAfter, and reports whether st has applied it (or does within a
// moment: the watch delivers a commit a little after it is readable).
func (r *Replica) probe(ctx context.Context, st *store.Store) bool {
	pctx, cancel := context.WithTimeout(ctx, r.cfg.StaleAfter/2)
	defer cancel()
	cur, err := r.cfg.Log.Current(pctx)
	if err != nil {
		return false
	}
	raise(&r.logCurrent, uint64(cur))
	wctx, wcancel := context.WithTimeout(ctx, probeInterval)
	defer wcancel()
	return r.waitStore(wctx, st, uint64(cur)) == nil
}

// readyWhenCurrent asks the log for its latest commit, waits until st
// applied it, and then marks the replica ready, unless Follow number gen
// ended meanwhile (ctx).
func (r *Replica) readyWhenCurrent(ctx context.Context, st *store.Store, gen uint64) {
	var asked time.Time
	for {
		asked = time.Now()
		cur, err := r.cfg.Log.Current(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			r.failed("reading the log's latest position", err)
			if !sleep(ctx, r.cfg.Retry) {
				return
			}
			continue
		}
		raise(&r.logCurrent, uint64(cur))
		if err := r.waitStore(ctx, st, uint64(cur)); err != nil {
			return
		}
		break
	}
	r.mu.Lock()
	fresh := r.followGen == gen && ctx.Err() == nil && r.current.Load() == st
	if fresh {
		// Confirmed current as of when the log was asked.
		r.confirmed.Store(asked.UnixNano())
		r.ready = true
	}
	r.mu.Unlock()
	if fresh {
		r.logger.Info("cluster replica ready", "position", uint64(st.Applied()), "groups", st.Stats().Groups)
	}
}

// waitStore blocks until st applied pos, or ctx ends.
func (r *Replica) waitStore(ctx context.Context, st *store.Store, pos uint64) error {
	for {
		r.mu.Lock()
		changed := r.appliedChanged
		r.mu.Unlock()
		if uint64(st.Applied()) >= pos {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// raise sets v to n unless it already holds more.
func raise(v *atomic.Uint64, n uint64) {
	for {
		old := v.Load()
		if old >= n || v.CompareAndSwap(old, n) {
			return
		}
	}
}
