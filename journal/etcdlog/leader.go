package etcdlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/pushgate/pushgate/journal"
)

// term is one stretch of leadership: from the barrier Campaign wrote to
// the first failed commit, the loss of the session, Resign or Close.
type term struct {
	key   string // the election key
	rev   int64  // its create revision: the fence of every commit
	lease clientv3.LeaseID
	seq   uint64 // the barrier's batch sequence number
	done  chan struct{}
	err   error // why the term ended; set, under Log.mu, before done is closed
	// head is head's mod revision after the term's last commit, the guard
	// of the next. Only the committer uses it once the term began.
	head int64
	// stopWatch stops watching the session for this term.
	stopWatch func() bool
}

// liveTerm returns the current term if it has not ended. l.mu must be held.
func (l *Log) liveTerm() *term {
	if l.term == nil || l.term.err != nil {
		return nil
	}
	return l.term
}

// IsLeader reports whether a term is running: whether Append takes writes.
func (l *Log) IsLeader() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.liveTerm() != nil
}

// TermDone returns a channel closed when the current term ends; when no
// term runs it is already closed.
func (l *Log) TermDone() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t := l.liveTerm(); t != nil {
		return t.done
	}
	return l.notLeading
}

// TermErr returns why the last term ended, or nil while it runs or before
// the first.
func (l *Log) TermErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.term == nil {
		return nil
	}
	return l.term.err
}

// Campaign blocks until this replica leads: it waits to win the election
// (or for ctx to end, or the session to be lost), writes the term's
// barrier to head, fenced by the election key, so that no commit of an
// earlier term (this replica's or another's) can apply after it, and waits
// until Load or Follow has delivered the barrier, so that the store that
// takes the writes holds every earlier commit. Follow must therefore be
// running. While a term runs, Campaign returns nil at once. Resign waits
// for a Campaign in progress; Close stops it.
func (l *Log) Campaign(ctx context.Context) error {
	l.campaignMu.Lock()
	defer l.campaignMu.Unlock()
	l.mu.Lock()
	closed, live := l.closed, l.liveTerm() != nil
	l.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case live:
		return nil
	case l.cfg.AdvertiseURL == "":
		return errors.New("campaign: no Config.AdvertiseURL: the other replicas could not reach this one while it leads")
	}

	s, err := l.liveSession(ctx)
	if err != nil {
		return err
	}
	// Campaigning stops when the session is lost: its lease, which the
	// election key would carry, is gone.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.ctx, func() { cancel(context.Cause(s.ctx)) })
	defer stop()

	e := concurrency.NewElection(s.Session, l.keys.election)
	if err := e.Campaign(ctx, l.cfg.AdvertiseURL); err != nil {
		return fmt.Errorf("campaign for leadership: %w", noSpace(contextCause(ctx, err)))
	}
	l.mu.Lock()
	l.election = e
	l.mu.Unlock()

	seq := l.seq.Add(1)
	rctx, rcancel := context.WithTimeout(ctx, l.cfg.RequestTimeout)
	resp, err := l.client.Txn(rctx).
		If(clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev())).
		Then(clientv3.OpPut(l.keys.head, headValue(s.Lease(), seq))).
		Commit()
	rcancel()
	if err == nil && !resp.Succeeded {
		err = fmt.Errorf("%w: the election key %s vanished after the election", ErrNotLeader, e.Key())
	}
	if err != nil {
		err = noSpace(contextCause(ctx, err))
		l.resignQuietly(e)
		return fmt.Errorf("begin a term: write the barrier to %s: %w", l.keys.head, err)
	}
	barrier := journal.Position(resp.Header.Revision)
	if err := l.waitDelivered(ctx, barrier); err != nil {
		l.resignQuietly(e)
		return fmt.Errorf("begin a term: wait for Follow to deliver revision %d: %w", barrier, contextCause(ctx, err))
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	t := &term{key: e.Key(), rev: e.Rev(), lease: s.Lease(), seq: seq, head: resp.Header.Revision, done: make(chan struct{})}
	t.stopWatch = context.AfterFunc(s.ctx, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.endTerm(t, context.Cause(s.ctx))
	})
	l.term = t
	l.stats.Terms++
	// No batch of an earlier term can commit after the barrier, and the
	// store holds them all: their outcome is no longer in doubt.
	for s := range l.ambiguous {
		if s < seq {
			delete(l.ambiguous, s)
		}
	}
	l.log.Info("leading the cluster", "election_key", t.key, "barrier_revision", uint64(barrier))
	return nil
}

// liveSession returns the election session, making a new one when there
// is none or the last was lost. The lease is granted with ctx, so that an
// unreachable etcd does not hold Campaign beyond it.
func (l *Log) liveSession(ctx context.Context) (*session, error) {
	l.mu.Lock()
	s := l.session
	l.mu.Unlock()
	if s != nil && !s.lost() {
		return s, nil
	}
	if s != nil {
		l.revokeLost(ctx, s)
	}
	s, err := l.newSession(ctx)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	closed := l.closed
	if !closed {
		l.session = s
		l.leases[s.Lease()] = struct{}{}
	}
	l.mu.Unlock()
	if closed {
		s.stop(ErrClosed)
		return nil, ErrClosed
	}
	return s, nil
}

// endTerm ends t with err, if it is still running: later Appends fail, and
// so do the queued ones. l.mu must be held.
func (l *Log) endTerm(t *term, err error) {
	if t == nil || t.err != nil {
		return
	}
	t.err = err
	close(t.done)
	if t.stopWatch != nil {
		t.stopWatch()
	}
	l.failQueue(fmt.Errorf("%w: the term ended: %w", ErrNotLeader, err))
	l.noteError(err)
	if errors.Is(err, ErrResigned) || errors.Is(err, ErrClosed) {
		l.log.Info("leadership ended", "reason", err)
	} else {
		l.log.Warn("leadership ended", "reason", err)
	}
}

// Resign ends the term and deletes the election key, so that another
// replica takes over without waiting for the lease to expire.
func (l *Log) Resign(ctx context.Context) error {
	l.campaignMu.Lock()
	defer l.campaignMu.Unlock()
	l.mu.Lock()
	l.endTerm(l.liveTerm(), ErrResigned)
	e := l.election
	l.election = nil
	l.mu.Unlock()
	if e == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, l.cfg.RequestTimeout)
	defer cancel()
	if err := e.Resign(ctx); err != nil {
		return fmt.Errorf("resign: delete the election key %s: %w", e.Key(), err)
	}
	return nil
}

// resignQuietly gives up an election won by a Campaign that then failed,
// so that other replicas need not wait for the lease.
func (l *Log) resignQuietly(e *concurrency.Election) {
	ctx, cancel := context.WithTimeout(l.ctx, l.cfg.RequestTimeout)
	defer cancel()
	if err := e.Resign(ctx); err != nil {
		l.log.Warn("could not resign after a failed campaign; the lease will expire", "election_key", e.Key(), "err", err)
	}
}

// Leader returns the advertised URL of the replica leading the cluster,
// or "" when none does.
func (l *Log) Leader(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.RequestTimeout)
	defer cancel()
	resp, err := l.client.Get(ctx, l.keys.election+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return "", fmt.Errorf("read the election under %s/: %w", l.keys.election, err)
	}
	if len(resp.Kvs) == 0 {
		return "", nil
	}
	return string(resp.Kvs[0].Value), nil
}

// EndTermOf ends the term of the replica advertised at url, if it leads:
// the lease its election key carries is revoked, so the key goes at once,
// the next replica in line leads without waiting for the lease to expire,
// and no commit of that term can land any more (each is fenced by the
// key). Call it only when the process at url is known to be gone (its
// address refuses connections): safety never depends on it, only how long
// a dead leader blocks writes does. It reports whether it ended a term.
func (l *Log) EndTermOf(ctx context.Context, url string) (bool, error) {
	if url == "" || url == l.cfg.AdvertiseURL {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, l.cfg.RequestTimeout)
	defer cancel()
	resp, err := l.client.Get(ctx, l.keys.election+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return false, fmt.Errorf("read the election under %s/: %w", l.keys.election, err)
	}
	if len(resp.Kvs) == 0 || string(resp.Kvs[0].Value) != url {
		return false, nil
	}
	lease := clientv3.LeaseID(resp.Kvs[0].Lease)
	if _, err := l.client.Revoke(ctx, lease); err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return false, nil
		}
		return false, fmt.Errorf("revoke the lease %x of the leader at %s: %w", int64(lease), url, err)
	}
	l.log.Warn("ended the term of a leader whose address refuses connections", "leader", url, "election_key", string(resp.Kvs[0].Key))
	return true, nil
}

// headValue is head's value for batch seq of the writer holding lease.
func headValue(lease clientv3.LeaseID, seq uint64) string {
	return strconv.FormatInt(int64(lease), 16) + "/" + strconv.FormatUint(seq, 10)
}

// contextCause returns ctx's cause instead of err when ctx ended with one
// of its own (the session was lost), and err otherwise.
func contextCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
		return fmt.Errorf("%w (%w)", cause, err)
	}
	return err
}
