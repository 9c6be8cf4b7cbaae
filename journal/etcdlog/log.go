package etcdlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/pushgate/pushgate/journal"
)

// The Log implements every interface of the replication seam.
var (
	_ journal.Log         = (*Log)(nil)
	_ journal.Snapshotter = (*Log)(nil)
	_ journal.Follower    = (*Log)(nil)
)

// Log is pushgate's change log in etcd: a journal.Log while this replica
// leads, a journal.Snapshotter and a journal.Follower always. It is safe
// for concurrent use.
type Log struct {
	cfg    Config
	keys   keys
	log    *slog.Logger
	client *clientv3.Client

	ctx           context.Context // cancelled by Close, after the committer stopped
	cancel        context.CancelFunc
	committerDone chan struct{}
	probesDone    chan struct{} // closed when probeMembers returned
	closeOnce     sync.Once
	closeErr      error
	notLeading    chan struct{} // closed; TermDone's answer outside a term

	seq atomic.Uint64 // batch sequence numbers, for head's value

	campaignMu sync.Mutex // one Campaign (or Resign) at a time

	mu       sync.Mutex
	wake     *sync.Cond // signals the committer; uses mu
	closed   bool
	queue    []*entry // Appends not yet taken by the committer
	term     *term    // the current term, or the last one (ended)
	session  *session
	election *concurrency.Election // of the last term, to resign
	// leases holds every lease this Log campaigned with, and ambiguous
	// the sequence numbers of its batches whose outcome it did not learn:
	// together they tell Follow which batches are the Log's own.
	leases    map[clientv3.LeaseID]struct{}
	ambiguous map[uint64]struct{}
	delivered journal.Position // newest position Load or Follow handed over
	waiters   []deliveryWaiter
	stats     Stats
}

// deliveryWaiter is a Campaign waiting for Follow to deliver pos.
type deliveryWaiter struct {
	pos  journal.Position
	done chan struct{}
}

// Stats are figures about a Log, for status pages and metrics.
type Stats struct {
	// Leading is set while a term lasts.
	Leading bool
	// Terms counts the terms begun.
	Terms uint64
	// Committed is the position (etcd revision) of the last batch this Log
	// committed.
	Committed journal.Position
	// Delivered is the newest position Load or Follow handed over.
	Delivered journal.Position
	// WatchRevision is the etcd revision the watch last reported to be
	// current at (with events or a progress notification).
	WatchRevision journal.Position
	// Commits counts committed transactions, Ops the group operations
	// they carried (after coalescing) and Bytes their values as stored.
	Commits, Ops, Bytes uint64
	// Failed counts failed transactions, of which Ambiguous had an unknown
	// outcome and NoSpace met etcd's NOSPACE alarm.
	Failed, Ambiguous, NoSpace uint64
	// LastError is the last failure of a commit or a term, and
	// LastErrorTime when it happened.
	LastError     error
	LastErrorTime time.Time
}

// watchWindow is the gRPC flow-control window of the Log's etcd client, for
// each stream and for the connection (see Open).
const watchWindow = 4 << 20

// Open connects to etcd and checks (or, in a new cluster, creates) the meta
// key. The Log does not lead until Campaign returns.
func Open(ctx context.Context, cfg Config) (*Log, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("etcd log: %w", err)
	}
	// The client lives until Close, not as long as the ctx of Open.
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var (
		tracker *connTracker
		dialer  = []grpc.DialOption{
			grpc.WithDefaultCallOptions(grpc.ForceCodecV2(recvCodec{pool: &bufferPool{}})),
			// A follower's watch takes every replicated push. With
			// gRPC's window (64 KiB, grown by its bandwidth probe) etcd
			// sent it in more, smaller pieces: with these, a follower
			// spent 100 against 112 us of CPU per applied push (4
			// alternating runs of a 3-replica cluster taking 8 clients'
			// pushes of the bench payload; its reading goroutine's share
			// halved). The window bounds what the connection buffers
			// unread, 4 MiB a stream.
			grpc.WithInitialWindowSize(watchWindow),
			grpc.WithInitialConnWindowSize(watchWindow),
		}
	)
	if len(cfg.Endpoints) > 1 {
		// The connections are tracked, so that probeMembers can close
		// those to a hung member.
		tracker = newConnTracker()
		dialer = append(dialer, grpc.WithContextDialer(tracker.dial))
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		TLS:         cfg.TLS,
		Username:    cfg.Username,
		Password:    cfg.Password,
		DialTimeout: cfg.DialTimeout,
		// gRPC keepalives find a dead connection (a watch would otherwise
		// wait on it silently); etcd refuses pings more often than 5s.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: cfg.RequestTimeout,
		Logger:               zap.New(slogCore{h: cfg.Logger.Handler().WithAttrs([]slog.Attr{slog.String("component", "etcd-client")})}),
		Context:              lctx,
		DialOptions:          dialer,
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("etcd log: connect to %v: %w", cfg.Endpoints, err)
	}
	l := &Log{
		cfg:           cfg,
		keys:          keysFor(cfg.Prefix),
		log:           cfg.Logger,
		client:        client,
		ctx:           lctx,
		cancel:        cancel,
		committerDone: make(chan struct{}),
		probesDone:    make(chan struct{}),
		notLeading:    make(chan struct{}),
		leases:        make(map[clientv3.LeaseID]struct{}),
		ambiguous:     make(map[uint64]struct{}),
	}
	close(l.notLeading)
	l.wake = sync.NewCond(&l.mu)
	if tracker != nil {
		go func() {
			defer close(l.probesDone)
			l.probeMembers(lctx, tracker)
		}()
	} else {
		close(l.probesDone)
	}
	if err := l.checkMeta(ctx); err != nil {
		cancel()
		<-l.probesDone
		return nil, errors.Join(fmt.Errorf("etcd log at %s: %w", cfg.Prefix, err), client.Close())
	}
	go l.commitLoop()
	return l, nil
}

// Close ends the term (pending Appends fail with ErrClosed), waits for the
// transaction in flight, revokes the election lease so that another replica
// takes over at once, and disconnects. A Follow running on the Log returns.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		if l.liveTerm() != nil {
			l.endTerm(l.term, ErrClosed)
		}
		l.failQueue(ErrClosed)
		s := l.session
		l.wake.Broadcast()
		l.mu.Unlock()
		<-l.committerDone
		var errs []error
		switch {
		case s == nil:
		case s.lost():
			s.stop(ErrClosed) // its lease is gone or going
		default:
			s.stop(ErrClosed)
			// Revoking deletes the election key; it is bounded by the TTL.
			if err := l.revoke(s); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
				errs = append(errs, fmt.Errorf("revoke the election lease: %w", err))
			}
		}
		l.cancel()
		<-l.probesDone
		if err := l.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, fmt.Errorf("close the etcd client: %w", err))
		}
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}

// Stats returns the Log's figures.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.Leading = l.liveTerm() != nil
	s.Delivered = l.delivered
	return s
}

// noteError records a failure for Stats. l.mu must be held.
func (l *Log) noteError(err error) {
	l.stats.LastError = err
	l.stats.LastErrorTime = time.Now()
}

// noteDelivered records that Load or Follow handed over everything up to
// pos, and wakes the Campaigns waiting for it.
func (l *Log) noteDelivered(pos journal.Position) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if pos <= l.delivered {
		return
	}
	l.delivered = pos
	kept := l.waiters[:0]
	for _, w := range l.waiters {
		if w.pos <= pos {
			close(w.done)
			continue
		}
		kept = append(kept, w)
	}
	clear(l.waiters[len(kept):])
	l.waiters = kept
}

// waitDelivered blocks until Load or Follow has handed over pos, or ctx
// ends.
func (l *Log) waitDelivered(ctx context.Context, pos journal.Position) error {
	l.mu.Lock()
	if l.delivered >= pos {
		l.mu.Unlock()
		return nil
	}
	w := deliveryWaiter{pos: pos, done: make(chan struct{})}
	l.waiters = append(l.waiters, w)
	l.mu.Unlock()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		defer l.mu.Unlock()
		for i, o := range l.waiters {
			if o.done == w.done {
				l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
				break
			}
		}
		return ctx.Err()
	}
}
