package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pushgate/pushgate/store"
)

// Config configures a Replica.
type Config struct {
	// Log is the shared log.
	Log Log
	// NewStore returns an empty store built with the gateway's options,
	// its own metric names reserved. The replica calls it for each load.
	NewStore func() *store.Store
	// AdvertiseURL is the URL other replicas reach this one at (the value
	// Log.Leader returns while this replica leads).
	AdvertiseURL string
	// Retry is the pause after a failed load before the next try, and
	// the longest after a failed follow or campaign (those start at 50ms
	// and double: see backoff.go); default 500ms.
	Retry time.Duration
	// StaleAfter is how long a replica may go without confirming that it
	// is current (a probe of Log.Current from a quorum that its store had
	// applied), or half as long paused itself, before it is not ready
	// until it has confirmed again; default 2s.
	StaleAfter time.Duration
	// Logger receives the replica's state changes; nil discards them.
	Logger *slog.Logger
}

// Replica is one pushgate replica of a cluster: the store it serves, whether
// that store is current, and whether it takes writes. Its methods are safe
// for concurrent use; Run drives it.
type Replica struct {
	cfg    Config
	logger *slog.Logger

	current atomic.Pointer[store.Store]
	// confirmed is when the served store was last confirmed current (Unix
	// nanoseconds; see watchReadiness).
	confirmed atomic.Int64
	// logCurrent is the latest position Log.Current returned.
	logCurrent atomic.Uint64
	// rebuilds counts the stores Run rebuilt (Status.Rebuilds).
	rebuilds atomic.Uint64

	// gate admits writes to the current store (BeginWrite holds it for
	// reading); closing writes takes it for writing, so that it waits for
	// the writes in flight to be answered before the store is rebuilt.
	gate     sync.RWMutex
	writable bool // guarded by gate
	// leading mirrors writable for Status, which must not wait for gate.
	leading atomic.Bool

	mu sync.Mutex
	// ready is set once the current store applied what the log held when
	// it was asked, by the running Follow (followGen counts them).
	ready     bool
	followGen uint64
	// appliedChanged is closed (and replaced) whenever the current store
	// applied a batch or was swapped.
	appliedChanged chan struct{}
	lastErr        error
	lastErrAt      time.Time

	// leaderURL caches Log.Leader, read at leaderAt, for leaderFresh:
	// every forwarded write asks. endedURL and endedAt are the last leader
	// LeaderGone ended the term of, and when.
	leaderMu  sync.Mutex
	leaderURL string
	leaderAt  time.Time
	endedURL  string
	endedAt   time.Time
}

// leaderFresh is how long a leader's URL read from the log is used before
// it is read again. A dead leader's key outlives it by the election's
// lease anyway; a forwarding replica retries meanwhile.
const leaderFresh = 250 * time.Millisecond

// New returns a replica that serves an empty store, not ready, until Run
// has loaded the log.
func New(cfg Config) *Replica {
	if cfg.Retry <= 0 {
		cfg.Retry = 500 * time.Millisecond
	}
	if cfg.StaleAfter <= 0 {
		cfg.StaleAfter = 2 * time.Second
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &Replica{cfg: cfg, logger: logger, appliedChanged: make(chan struct{})}
	r.current.Store(r.newStore())
	return r
}

// newStore builds an empty store that writes through the log.
func (r *Replica) newStore() *store.Store {
	st := r.cfg.NewStore()
	st.SetJournal(r.cfg.Log)
	return st
}

// Store returns the store the replica serves now. A rebuild swaps in
// another one: callers fetch it per request.
func (r *Replica) Store() *store.Store { return r.current.Load() }

// Ready reports whether the served store holds the log's state: loaded,
// followed, and caught up with what the log had committed when it was
// last asked. A replica that is not ready must not be scraped.
func (r *Replica) Ready() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Asked before the readiness goroutine noticed a pause of this
	// process (requests queued while it was stopped are answered the
	// moment it resumes), the age of the last confirmation decides.
	return r.ready && time.Since(time.Unix(0, r.confirmed.Load())) <= r.cfg.StaleAfter
}

// Run drives the replica until ctx ends: load the log into a fresh store,
// swap it in, follow the log and campaign; rebuild when the watch was
// compacted away or a term ended. It returns nil when ctx ends.
func (r *Replica) Run(ctx context.Context) error {
	for first := true; ctx.Err() == nil; first = false {
		if !first {
			r.rebuilds.Add(1)
		}
		st, err := r.load(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			r.failed("loading the cluster's state", err)
			sleep(ctx, r.cfg.Retry)
			continue
		}
		r.serve(ctx, st)
	}
	return nil
}

// load reads the log into a fresh store and swaps it in, not ready.
func (r *Replica) load(ctx context.Context) (*store.Store, error) {
	start := time.Now()
	st := r.newStore()
	rs := st.NewRestorer(0)
	pos, err := r.cfg.Log.Load(ctx, rs.Restore)
	if cerr := rs.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	st.MarkApplied(pos)
	r.current.Store(st)
	r.notifyApplied()
	r.logger.Info("cluster state loaded", "position", uint64(pos), "groups", st.Stats().Groups, "duration", time.Since(start))
	return st, nil
}

// serve follows the log into st and campaigns with it until st must be
// rebuilt (a compacted watch, an ended term) or ctx ends. When it returns,
// the replica is not ready, takes no writes, and neither goroutine it
// started runs any more.
func (r *Replica) serve(ctx context.Context, st *store.Store) {
	sctx, cancel := context.WithCancel(ctx)
	followed := make(chan error, 1)
	go func() { followed <- r.follow(sctx, st) }()
	led := make(chan error, 1)
	go func() { led <- r.lead(sctx, st) }()

	var followDone, leadDone bool
	select {
	case err := <-followed:
		followDone = true
		if ctx.Err() == nil {
			r.failed("the watch lost the log's history; rebuilding", err)
		}
	case err := <-led:
		leadDone = true
		if ctx.Err() == nil {
			r.failed("the term ended; rebuilding from the log before taking writes again", err)
		}
	case <-ctx.Done():
	}
	r.setReady(false)
	r.closeWrites()
	cancel()
	if !followDone {
		<-followed
	}
	if !leadDone {
		<-led
	}
}

// lead campaigns until this replica leads a term, opens writes to st for
// the term, and returns when the term ended (st must be rebuilt: its last
// batch may have failed ambiguously) or ctx ended.
func (r *Replica) lead(ctx context.Context, st *store.Store) error {
	pause := newBackoff(r.cfg.Retry)
	for {
		err := r.cfg.Log.Campaign(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			break
		}
		r.failed("campaigning", err)
		if !pause.wait(ctx) {
			return ctx.Err()
		}
	}
	done := r.cfg.Log.TermDone()
	r.openWrites(st)
	r.logger.Info("leading: this replica takes writes", "position", uint64(st.Applied()))
	select {
	case <-done:
		r.closeWrites()
		return errors.New("the term ended")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// openWrites lets writes reach st, if it is still the served store.
func (r *Replica) openWrites(st *store.Store) {
	r.gate.Lock()
	defer r.gate.Unlock()
	r.writable = r.current.Load() == st
	r.leading.Store(r.writable)
}

// closeWrites refuses new writes and waits for those in flight.
func (r *Replica) closeWrites() {
	r.gate.Lock()
	defer r.gate.Unlock()
	r.writable = false
	r.leading.Store(false)
}

// BeginWrite admits one write to the served store: ok is false when this
// replica does not take writes now (another one leads, or none does yet, or
// this one is rebuilding), and the write must be forwarded or refused.
// release must be called once the write was answered. A rebuild waits for
// the admitted writes to be released.
func (r *Replica) BeginWrite() (release func(), ok bool) {
	if !r.gate.TryRLock() {
		// Writes are being closed (or opened): refuse rather than wait.
		return nil, false
	}
	if !r.writable {
		r.gate.RUnlock()
		return nil, false
	}
	return r.gate.RUnlock, true
}

// Leader returns the URL of the replica that takes writes, "" when none is
// known or when it is this replica (which then takes writes itself once
// BeginWrite admits them).
func (r *Replica) Leader(ctx context.Context) (string, error) {
	r.leaderMu.Lock()
	defer r.leaderMu.Unlock()
	if time.Since(r.leaderAt) > leaderFresh {
		url, err := r.cfg.Log.Leader(ctx)
		if err != nil {
			return "", fmt.Errorf("find the leader: %w", err)
		}
		r.leaderURL, r.leaderAt = url, time.Now()
	}
	url := r.leaderURL
	if url == r.cfg.AdvertiseURL {
		return "", nil
	}
	return url, nil
}

// ForgetLeader drops the cached leader's URL if it is url (a replica
// that refused a write as not the leader), so that the next Leader call
// reads the log instead of naming it again until the cache expires.
func (r *Replica) ForgetLeader(url string) {
	r.leaderMu.Lock()
	defer r.leaderMu.Unlock()
	if r.leaderURL == url {
		r.leaderAt = time.Time{}
	}
}

// LeaderGone is told that the leader advertised at url refuses connections:
// its process is gone. The replica ends that leader's term at once
// (Log.EndTermOf) rather than wait for its lease to expire, so that
// another replica leads within moments, and forgets it as the leader. Of
// the many writes that may find the address dead at once, one a second
// ends the term; the others only wait.
func (r *Replica) LeaderGone(ctx context.Context, url string) {
	r.leaderMu.Lock()
	if r.leaderURL == url {
		r.leaderAt = time.Time{}
	}
	if r.endedURL == url && time.Since(r.endedAt) < time.Second {
		r.leaderMu.Unlock()
		return
	}
	r.endedURL, r.endedAt = url, time.Now()
	r.leaderMu.Unlock()
	if _, err := r.cfg.Log.EndTermOf(ctx, url); err != nil {
		r.logger.Warn("could not end the term of a leader whose address refuses connections", "leader", url, "err", err)
	}
}

// WaitApplied blocks until the served store applied pos, or ctx ends.
func (r *Replica) WaitApplied(ctx context.Context, pos uint64) error {
	for {
		r.mu.Lock()
		changed := r.appliedChanged
		r.mu.Unlock()
		if uint64(r.current.Load().Applied()) >= pos {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("wait for position %d (applied %d): %w", pos, r.current.Load().Applied(), ctx.Err())
		}
	}
}

// notifyApplied wakes the WaitApplied callers.
func (r *Replica) notifyApplied() {
	r.mu.Lock()
	defer r.mu.Unlock()
	close(r.appliedChanged)
	r.appliedChanged = make(chan struct{})
}

// setReady sets readiness, logging a change.
func (r *Replica) setReady(ready bool) {
	r.mu.Lock()
	changed := r.ready != ready
	r.ready = ready
	r.mu.Unlock()
	if changed {
		r.logger.Info("cluster readiness changed", "ready", ready, "position", uint64(r.current.Load().Applied()))
	}
}

// failed records and logs an error.
func (r *Replica) failed(what string, err error) {
	r.mu.Lock()
	r.lastErr, r.lastErrAt = fmt.Errorf("%s: %w", what, err), time.Now()
	r.mu.Unlock()
	r.logger.Warn(what, "err", err)
}

// sleep waits d or until ctx ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
