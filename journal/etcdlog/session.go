package etcdlog

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// session is the election session: a lease the Log keeps alive itself
// (keepLease), and the concurrency.Session the election is run with.
//
// The concurrency.Session's own keepalives go over one stream, to one
// member, which answers each in turn. When etcd's leader member hangs, a
// follower forwards the renewal it got to that leader and waits for it up
// to etcd's request timeout (7s by default) even after the other members
// elected a new leader, holding every later renewal on that stream: the
// client saw no answer for the TTL and called the session lost, though the
// new leader had extended the lease. With etcd's leader stopped (SIGSTOP)
// for 6s, the leading replica's session was lost in 2 of 6 runs (in one, no
// push was acknowledged for 6.9s, until after the stop), the other
// replicas' sessions in 5 of 6. So the Log renews the lease itself, each
// renewal on a stream of its own bounded by leaseRenewAttempt, and sent
// again at once, to whichever member the client picks, when it fails; the
// session is lost only when no renewal was answered for the TTL, which
// happened in none of 18 runs. The concurrency.Session's keepalives
// go on, and do no harm; their loss is not the session's.
//
// What the Log cannot prevent: etcd's leader, stopped and resumed, may
// revoke the leases it saw no renewal of meanwhile, though its peers' new
// leader kept them alive (etcd-io/etcd#15247: its check that it still leads
// passes as soon as it ticks again). In 6 of 18 runs with etcd's leader
// stopped for 6s or 12s, every replica's lease was revoked within 0.2s of
// its resumption: the leader's next commit failed as deposed (nothing
// written), and a replica led again within about half a second.
type session struct {
	*concurrency.Session
	// ctx ends, with the cause ErrSessionLost, once the lease may have
	// expired, or with ErrClosed when the Log closes.
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when keepLease returned
	// revoking is set once revokeLost tried to revoke the lease.
	revoking atomic.Bool
}

// leaseRenewAttempt bounds one renewal of the election lease; renewals are
// sent every third of the TTL, as the etcd client sends them.
const leaseRenewAttempt = time.Second

// newSession grants a lease with the Log's TTL (within ctx and the request
// timeout) and keeps it alive until it may have expired or the Log closes.
func (l *Log) newSession(ctx context.Context) (*session, error) {
	gctx, cancel := context.WithTimeout(ctx, l.cfg.RequestTimeout)
	granted := time.Now()
	lease, err := l.client.Grant(gctx, l.cfg.leaseSeconds())
	cancel()
	if err != nil {
		return nil, fmt.Errorf("grant the election lease: %w", err)
	}
	cs, err := concurrency.NewSession(l.client, concurrency.WithLease(lease.ID),
		concurrency.WithTTL(int(l.cfg.leaseSeconds())), concurrency.WithContext(l.ctx))
	if err != nil {
		return nil, fmt.Errorf("keep the election lease alive: %w", err)
	}
	sctx, scancel := context.WithCancelCause(l.ctx)
	s := &session{Session: cs, ctx: sctx, cancel: scancel, done: make(chan struct{})}
	go l.keepLease(s, granted.Add(time.Duration(lease.TTL)*time.Second))
	return s, nil
}

// keepLease renews s's lease every third of the TTL, and at once again
// after a renewal that failed, until the lease may have expired (expires,
// reckoned from when the last renewal answered was sent) or s.ctx ends.
func (l *Log) keepLease(s *session, expires time.Time) {
	defer close(s.done)
	defer s.Orphan() // the concurrency.Session's keepalives stop with it
	ttl := time.Duration(l.cfg.leaseSeconds()) * time.Second
	next := time.Now().Add(ttl / 3)
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
		left := time.Until(expires)
		if left <= 0 {
			s.cancel(fmt.Errorf("%w: no renewal of the lease %x answered within its TTL of %s", ErrSessionLost, int64(s.Lease()), ttl))
			return
		}
		sent := time.Now()
		ctx, cancel := context.WithTimeout(s.ctx, min(leaseRenewAttempt, left))
		resp, err := l.client.KeepAliveOnce(ctx, s.Lease())
		cancel()
		switch {
		case err == nil:
			expires = sent.Add(time.Duration(resp.TTL) * time.Second)
			next = sent.Add(ttl / 3)
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			s.cancel(fmt.Errorf("%w: the lease %x expired", ErrSessionLost, int64(s.Lease())))
			return
		default:
			// Sent again at once, on a new stream: most likely to another
			// member, or to one that has learnt of etcd's new leader.
			next = time.Now().Add(commitRetryPause)
			if s.ctx.Err() == nil {
				l.log.Debug("renewing the election lease failed; sending again", "lease", fmt.Sprintf("%x", int64(s.Lease())), "err", err)
			}
		}
	}
}

// lost reports whether s's lease may have expired (or the Log closed).
func (s *session) lost() bool { return s.ctx.Err() != nil }

// stop ends keepLease with cause and waits for it.
func (s *session) stop(cause error) {
	s.cancel(cause)
	<-s.done
}

// revoke revokes s's lease (deleting the election key it carries), within
// the TTL: longer, and it has expired anyway.
func (l *Log) revoke(s *session) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(l.ctx), time.Duration(l.cfg.leaseSeconds())*time.Second)
	defer cancel()
	_, err := l.client.Revoke(ctx, s.Lease())
	return err
}

// revokeLost revokes the lease of s, a session this Log called lost, before
// a new one campaigns: the Log calls a session lost when no renewal was
// answered for the TTL, but etcd may have kept the lease alive all the
// same (a renewal that reached it, or a new etcd leader extending every
// lease), and then its election key, older than any new one, would hold
// the new campaign until the lease expired. With etcd's leader member
// killed with the leading replica (etcd 3.4), the new leader's own session
// was called lost that way, and its next campaign waited the TTL behind
// its own key: 3 s with no push acknowledged, in 1 of 9 runs. Revoking
// is safe: the term the lease carried ended when the session was called
// lost, and a late commit fenced by its key fails once the key is gone.
// It is bounded by a renewal attempt: an etcd that does not answer that
// soon lets the lease expire on its own.
func (l *Log) revokeLost(ctx context.Context, s *session) {
	if !s.revoking.CompareAndSwap(false, true) {
		return // tried already
	}
	rctx, cancel := context.WithTimeout(ctx, leaseRenewAttempt)
	defer cancel()
	_, err := l.client.Revoke(rctx, s.Lease())
	switch {
	case err == nil:
		l.log.Info("revoked the lease of the lost election session", "lease", fmt.Sprintf("%x", int64(s.Lease())))
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
	default:
		l.log.Debug("revoking the lease of the lost election session failed; it expires on its own", "lease", fmt.Sprintf("%x", int64(s.Lease())), "err", err)
	}
}
