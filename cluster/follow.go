package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/store"
)

// follow applies the log's batches to st, from the position st holds, until
// ctx ends or the log lost the history st needs (an error wrapping
// journal.ErrCompacted: st must be rebuilt). A Follow that fails otherwise
// is started again from where st is. The replica is ready while a Follow
// runs and has caught up with the log.
func (r *Replica) follow(ctx context.Context, st *store.Store) error {
	for {
		fctx, cancel := context.WithCancel(ctx)
		gen := r.startFollow()
		var wg sync.WaitGroup
		wg.Go(func() { r.readyWhenCurrent(fctx, st, gen) })
		err := r.cfg.Log.Follow(fctx, st.Applied(), func(b journal.Batch) error { return r.apply(st, b) })
		cancel()
		wg.Wait()
		r.setReady(false)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, journal.ErrCompacted):
			return err
		}
		r.failed("following the log", err)
		if !sleep(ctx, r.cfg.Retry) {
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

// readyWhenCurrent asks the log for its latest commit, waits until st
// applied it, and then marks the replica ready, unless Follow number gen
// ended meanwhile (ctx).
func (r *Replica) readyWhenCurrent(ctx context.Context, st *store.Store, gen uint64) {
	for {
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
