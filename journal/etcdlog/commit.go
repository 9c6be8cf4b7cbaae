package etcdlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pushgate/pushgate/journal"
)

// Append enqueues ops as one atomic batch of the current term and returns
// the Commit to wait on. It takes no I/O: the committer goroutine sends the
// batch with the others collected meanwhile. Outside a term it fails with
// ErrNotLeader (wrapping why the last term ended); a batch too large for
// one etcd transaction fails with ErrTooLarge.
func (l *Log) Append(ops ...journal.Op) (journal.Commit, error) {
	e, err := newEntry(ops, len(l.keys.groups))
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	t := l.liveTerm()
	if t == nil {
		return nil, l.notLeader()
	}
	e.term = t
	l.queue = append(l.queue, e)
	l.wake.Signal()
	return e, nil
}

// notLeader is the error of a write outside a term. l.mu must be held.
func (l *Log) notLeader() error {
	if l.term != nil && l.term.err != nil {
		return fmt.Errorf("%w: the term ended: %w", ErrNotLeader, l.term.err)
	}
	return ErrNotLeader
}

// failQueue fails every queued entry with err. l.mu must be held.
func (l *Log) failQueue(err error) {
	for _, e := range l.queue {
		e.finish(0, err)
	}
	clear(l.queue)
	l.queue = l.queue[:0]
}

// commitLoop is the committer: it takes the entries appended while the
// last transaction was in flight, packs as many as one transaction holds
// (in order: a batch never overtakes an earlier one) and commits them.
// It returns once the Log is closed and everything taken is finished.
//
// One transaction is in flight at a time, so appenders that wait for their
// commit (a push is answered once committed) fall into two cohorts: those
// in the transaction in flight and those queued meanwhile. Left alone, each
// transaction would carry half of them, and etcd's cost per transaction
// (raft, the WAL's fsync, replication, the apply on each member and one
// event per watcher) would weigh on every push twice as often as it must.
// So when fewer entries are queued than were outstanding when the last
// commit finished, the committer waits a little (Config.CommitLinger, and
// never longer than that commit took) for the appenders it just released
// to append again, and their entries join the same transaction. Measured
// with bench/cluster.sh at 8 clients (one push each in flight, so the
// cohort released is all of them): with the linger a transaction carried
// 7.9 pushes, without it 3.6-3.9, and the linger raised pushes/s by a
// half and lowered the median push latency (4.4-4.8 ms against 6.5-7.6):
// committing at once when nothing is queued is the worse choice there.
func (l *Log) commitLoop() {
	defer close(l.committerDone)
	var (
		taken []*entry // entries out of the queue, not yet committed
		// outstanding is how many entries were taken or queued when the
		// last commit finished, and took how long it lasted.
		outstanding int
		took        time.Duration
	)
	for {
		if !l.takeQueued(&taken, time.Time{}) {
			return
		}
		if len(taken) < outstanding {
			deadline := time.Now().Add(min(l.cfg.CommitLinger, took))
			for len(taken) < outstanding && !l.fullBatch(taken) && time.Now().Before(deadline) {
				if !l.takeQueued(&taken, deadline) {
					return
				}
			}
		}
		if len(taken) == 0 {
			continue // every entry taken was of an ended term
		}

		t := taken[0].term
		var b batch
		n := 0
		for ; n < len(taken) && taken[n].term == t; n++ {
			taken[n].pack(len(l.keys.groups))
			if !b.add(taken[n], len(l.keys.groups)) {
				break
			}
		}
		clear(taken[:n])
		taken = taken[n:]
		start := time.Now()
		l.commit(t, &b)
		took = time.Since(start)
		l.mu.Lock()
		outstanding = len(b.entries) + len(taken) + len(l.queue)
		l.mu.Unlock()
	}
}

// takeQueued moves the queued entries to taken, failing those of an ended
// term. When nothing is taken yet, it waits for an Append; when taken holds
// entries already, it waits for one until deadline (zero: it does not
// wait). It returns false once the Log is closed and nothing is left to
// commit.
func (l *Log) takeQueued(taken *[]*entry, deadline time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 && len(*taken) > 0 && !deadline.IsZero() && !l.closed {
		// A timer wakes the wait below at the deadline; a stray wake-up
		// (from an earlier timer) only makes the caller look again.
		timer := time.AfterFunc(time.Until(deadline), func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.wake.Broadcast()
		})
		defer timer.Stop()
		for len(l.queue) == 0 && !l.closed && time.Now().Before(deadline) {
			l.wake.Wait()
		}
	}
	for len(l.queue) == 0 && len(*taken) == 0 && !l.closed {
		l.wake.Wait()
	}
	*taken = append(*taken, l.queue...)
	clear(l.queue)
	l.queue = l.queue[:0]
	// Entries of an ended term fail with the term.
	kept := (*taken)[:0]
	for _, e := range *taken {
		if e.term.err != nil {
			e.finish(0, fmt.Errorf("%w: the term ended: %w", ErrNotLeader, e.term.err))
			continue
		}
		kept = append(kept, e)
	}
	clear((*taken)[len(kept):])
	*taken = kept
	return len(kept) > 0 || !l.closed
}

// fullBatch reports whether taken holds at least one transaction's worth
// of groups (counting each entry's, before coalescing across entries), or
// a delete-all, which commits on its own: waiting for more would not add
// to the next transaction.
func (l *Log) fullBatch(taken []*entry) bool {
	ops := 0
	for _, e := range taken {
		if e.deleteAll {
			return true
		}
		ops += len(e.slots)
	}
	return ops >= maxGroupOps
}

// commit sends b as one transaction of term t and finishes its entries. A
// failure ends the term.
func (l *Log) commit(t *term, b *batch) {
	seq := l.seq.Add(1)
	ops := make([]clientv3.Op, 0, len(b.slots)+2)
	if b.deleteAll {
		ops = append(ops, clientv3.OpDelete(l.keys.groups, clientv3.WithPrefix()))
	}
	for _, s := range b.slots {
		if s.set {
			ops = append(ops, clientv3.OpPut(l.keys.groups+s.key, string(s.val)))
		} else {
			ops = append(ops, clientv3.OpDelete(l.keys.groups+s.key))
		}
	}
	ops = append(ops, clientv3.OpPut(l.keys.head, headValue(t.lease, seq)))

	rev, ambiguous, err := l.send(t, seq, ops)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.stats.Failed++
		if ambiguous {
			l.stats.Ambiguous++
			// Should it have committed after all, Follow must deliver it
			// as another writer's: the store took it back.
			l.ambiguous[seq] = struct{}{}
		}
		if errors.Is(err, ErrNoSpace) {
			l.stats.NoSpace++
		}
		err = fmt.Errorf("commit %d groups: %w", len(b.slots), err)
		l.endTerm(t, err)
		for _, e := range b.entries {
			e.finish(0, err)
		}
		return
	}
	t.head = rev
	pos := journal.Position(rev)
	l.stats.Commits++
	l.stats.Committed = pos
	l.stats.Ops += uint64(len(b.slots))
	if b.deleteAll {
		l.stats.Ops++
	}
	for _, s := range b.slots {
		l.stats.Bytes += uint64(len(s.val))
	}
	for _, e := range b.entries {
		e.finish(pos, nil)
	}
}

// A commit is sent in attempts of at most commitAttempt each, within
// Config.RequestTimeout in all, so that one sent to a member that hangs is
// sent again, to another member, instead of failing ambiguously and ending
// the term. Sending it again is safe: every attempt carries the same
// guard, head's mod revision of the term's last commit, and the same value
// of head, which names this batch; whichever attempt applies first moves
// head, so no other can apply after it, and a later attempt whose guard
// fails reads head back (the Else branch): holding this batch's value, it
// tells the revision the batch committed at. A member's hang is usually
// noticed sooner (probeMembers closes its connections and the attempt
// fails at once); commitAttempt bounds an attempt the probes do not save,
// such as one sent to a member while etcd elects a new leader. With a
// member's link paused for 6s, the probes alone let a push wait up to 2.0s
// and failed the batch in flight, ending the term; with commits sent again
// too, none failed and none waited longer than 1.5s (see memberProbeInterval).
// A commit slower than commitAttempt on a healthy etcd is sent once more,
// and its guard then fails and reads head back: it costs a duplicate
// request, not a failure.
//
// commitRetryPause spaces attempts that fail fast (no connection, etcd
// electing a leader).
const (
	commitAttempt    = time.Second
	commitRetryPause = 100 * time.Millisecond
)

// send commits ops, which end with the put of head for batch seq, as one
// transaction of term t, in attempts (see commitAttempt), and returns the
// revision it committed at, or why it failed and whether it may have
// committed nevertheless (ambiguous).
func (l *Log) send(t *term, seq uint64, ops []clientv3.Op) (rev int64, ambiguous bool, err error) {
	deadline := time.Now().Add(l.cfg.RequestTimeout)
	var doubt error // the first attempt whose outcome is unknown
	for attempt := 1; ; attempt++ {
		start := time.Now()
		end := start.Add(commitAttempt)
		if end.After(deadline) {
			end = deadline
		}
		ctx, cancel := context.WithDeadline(l.ctx, end)
		resp, terr := l.client.Txn(ctx).
			If(
				clientv3.Compare(clientv3.CreateRevision(t.key), "=", t.rev),
				clientv3.Compare(clientv3.ModRevision(l.keys.head), "=", t.head),
			).
			Then(ops...).
			Else(clientv3.OpGet(t.key), clientv3.OpGet(l.keys.head)).
			Commit()
		cancel()
		retry := false // this attempt's own outcome is unknown
		switch {
		case terr == nil && resp.Succeeded:
			rev, ambiguous, err = resp.Header.Revision, false, nil
		case terr == nil && doubt == nil:
			ambiguous, err = false, l.guardError(t, resp)
		case terr == nil:
			rev, ambiguous, err = l.settle(t, seq, resp, doubt)
		default:
			err, retry = commitError(terr)
			ambiguous = retry
			if doubt != nil && !retry {
				// A refusal of this attempt says nothing of an earlier one.
				ambiguous, err = true, fmt.Errorf("%w: %w; sent again: %w", ErrAmbiguous, doubt, err)
			}
		}
		if err == nil && doubt != nil {
			l.log.Info("a commit sent again after an attempt of unknown outcome committed", "attempts", attempt, "revision", rev, "first_error", doubt)
		}
		next := start.Add(commitRetryPause)
		if next.Before(time.Now()) {
			next = time.Now()
		}
		if !retry || l.ctx.Err() != nil || deadline.Sub(next) < commitRetryPause {
			if ambiguous && attempt > 1 {
				err = fmt.Errorf("%w (%d attempts in %s)", err, attempt, l.cfg.RequestTimeout)
			}
			return rev, ambiguous, err
		}
		if doubt == nil {
			doubt = terr
		}
		select {
		case <-time.After(time.Until(next)):
		case <-l.ctx.Done():
			return rev, ambiguous, err
		}
	}
}

// settle explains a commit attempt whose guard failed after an earlier
// attempt's outcome was unknown (doubt), from the Else reads of the election
// key and head. Head holding this batch's value means an earlier attempt
// committed, at head's mod revision. Head unmoved since the term's last
// commit and the election key gone mean none did, nor ever can (each is
// fenced by the key). Head moved by another writer leaves it unknown
// whether an earlier attempt committed before.
func (l *Log) settle(t *term, seq uint64, resp *clientv3.TxnResponse, doubt error) (rev int64, ambiguous bool, err error) {
	headKvs := resp.Responses[1].GetResponseRange().GetKvs()
	if len(headKvs) > 0 && string(headKvs[0].Value) == headValue(t.lease, seq) {
		return headKvs[0].ModRevision, false, nil
	}
	keyKvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(headKvs) > 0 && headKvs[0].ModRevision == t.head && (len(keyKvs) == 0 || keyKvs[0].CreateRevision != t.rev) {
		return 0, false, l.guardError(t, resp)
	}
	return 0, true, fmt.Errorf("%w: %w; sent again: %w", ErrAmbiguous, doubt, l.guardError(t, resp))
}

// guardError explains a commit whose compares failed, from the Else reads
// of the election key and head.
func (l *Log) guardError(t *term, resp *clientv3.TxnResponse) error {
	keyKvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(keyKvs) == 0 || keyKvs[0].CreateRevision != t.rev {
		return fmt.Errorf("%w: deposed: the election key %s is gone", ErrNotLeader, t.key)
	}
	headKvs := resp.Responses[1].GetResponseRange().GetKvs()
	if len(headKvs) == 0 {
		return fmt.Errorf("%w: %s was deleted by another writer", ErrNotLeader, l.keys.head)
	}
	return fmt.Errorf("%w: %s moved to revision %d (writer %q), this term's last commit was at %d",
		ErrNotLeader, l.keys.head, headKvs[0].ModRevision, headKvs[0].Value, t.head)
}
