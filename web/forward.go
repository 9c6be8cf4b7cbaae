package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Headers of cluster mode's write forwarding.
const (
	// ForwardedByHeader marks a write one replica forwarded to the leader,
	// naming the forwarding replica. A replica that does not take writes
	// answers such a request 503 rather than forwarding it again.
	ForwardedByHeader = "Pushgate-Forwarded-By"
	// CommitPositionHeader is set on every write answered by the leader: a
	// replica that applied this log position shows the write's effect.
	CommitPositionHeader = "Pushgate-Commit-Position"
	// NotLeaderHeader marks a 503 answered by a replica that did not take
	// the write because it does not lead (it names the leader it knows,
	// or nothing), or because its term ended before the write reached the
	// log. Nothing was written, so a forwarding replica looks for the
	// leader again and resends the write rather than pass the answer on.
	NotLeaderHeader = "Pushgate-Not-Leader"
)

// Cluster is what forwarding needs of a cluster replica (package cluster's
// Replica).
type Cluster interface {
	// BeginWrite admits a write to this replica's own store; ok is false
	// when another replica takes writes, or none does yet. release is
	// called once the write was answered.
	BeginWrite() (release func(), ok bool)
	// Leader returns the URL of the replica that takes writes, "" when
	// none is known or when it is this one.
	Leader(ctx context.Context) (string, error)
	// ForgetLeader drops the cached leader if it is url: a forwarder
	// tells which replica refused a write as not the leader, so that the
	// next Leader call looks the leader up instead of naming that replica
	// again until the cache expires.
	ForgetLeader(url string)
	// LeaderGone tells that the leader at url refuses connections (its
	// process is gone), so that its term can end before its lease
	// expires.
	LeaderGone(ctx context.Context, url string)
	// WaitApplied blocks until this replica's store applied pos, or ctx
	// ends.
	WaitApplied(ctx context.Context, pos uint64) error
}

// ForwardOptions configures Forward.
type ForwardOptions struct {
	// Self is this replica's advertised URL, sent in ForwardedByHeader.
	Self string
	// LeaderWait bounds how long a write waits for a leader that takes
	// it, the leader's answer included, before it is answered 503 (default
	// 10s): a new one is elected within the election's lease TTL, so a
	// leader that hangs holds a forwarded write no longer than this.
	LeaderWait time.Duration
	// ApplyWait bounds how long a forwarded write waits for this replica
	// to apply the leader's commit before it is answered all the same
	// (default 10s).
	ApplyWait time.Duration
	// Client sends forwarded requests (default: one with
	// http.DefaultTransport's settings, more idle connections per host,
	// that follows no redirect).
	Client *http.Client
}

// forwarder sends the writes this replica does not take itself to the one
// that does, and answers once this replica shows their effect.
type forwarder struct {
	h    *Handler
	c    Cluster
	opts ForwardOptions
	// held keeps the buffers of bodies this replica took itself once its
	// handler read them (*[]byte, at most maxPooledBody bytes): the
	// leader reads every write into one, and a fresh one per push was
	// 1.6% of its CPU, with the collection it causes besides.
	held sync.Pool
}

// maxPooledBody is the largest body buffer forwarder.held keeps.
const maxPooledBody = 64 << 10

// Forward returns h behind a handler that forwards writes (pushes, deletes,
// wipe, admin bulk delete) to the cluster's leader when this replica does
// not take them itself: the request goes out with its method, path, query,
// headers (credentials included) and body; the leader's answer comes back
// once this replica applied the leader's commit, so a client reads its own
// write from the replica it wrote through. Reads are served locally. A
// write that finds no reachable leader within LeaderWait is answered 503.
func (h *Handler) Forward(c Cluster, opts ForwardOptions) http.Handler {
	if opts.LeaderWait <= 0 {
		opts.LeaderWait = 10 * time.Second
	}
	if opts.ApplyWait <= 0 {
		opts.ApplyWait = 10 * time.Second
	}
	if opts.Client == nil {
		transport := http.DefaultTransport.(*http.Transport).Clone()
		// Every follower sends all its writes to one leader: keep as
		// many connections to it as writes run at once (the default
		// keeps 2, and opens a connection per write beyond).
		transport.MaxIdleConnsPerHost = 256
		opts.Client = &http.Client{
			Transport: transport,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}
	return &forwarder{h: h, c: c, opts: opts}
}

// errNoLeader answers a write no leader could take.
var errNoLeader = errors.New("no cluster leader takes writes now")

// errLeaderMoved ends a forward attempt given up because another replica
// leads now.
var errLeaderMoved = errors.New("the leader changed while the write waited for its answer")

// forwardRetry is the pause between two looks for a reachable leader.
const forwardRetry = 50 * time.Millisecond

// leaderCheck is how often a forward waiting for the leader's answer looks
// whether another replica leads now: a leader that hangs is replaced
// within the election's lease TTL, and the write goes to the new one
// rather than wait out LeaderWait on a frozen connection.
const leaderCheck = 500 * time.Millisecond

// retryAfter is the Retry-After of a write answered 503 for want of a
// leader: a new one takes writes within seconds.
const retryAfter = "1"

// maxForwardedResponse bounds a leader's answer held in memory (answers to
// writes are a line of text, or a small JSON document).
const maxForwardedResponse = 4 << 20

// ServeHTTP serves a write here when this replica takes writes, forwards it
// when another one does, and hands everything else to the handler.
//
// A forwarded write is sent again (to the leader found next, or taken
// here) when the replica it went to refused it as not the leader, could
// not be reached, or was replaced while the write waited for its answer.
// Sending a write twice is harmless: a push or a delete sets its group to
// what its body says whether or not the first one landed, and wipe and
// bulk delete delete the same. Only a body too large to hold, of which
// part already went out, cannot be sent again.
func (f *forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	handler := f.h.writeHandler(r)
	if handler == "" || !f.h.opts.Ready() {
		// Not a write, or a replica still loading: the handler answers
		// (503 while loading).
		f.h.ServeHTTP(w, r)
		return
	}
	forwarded := r.Header.Get(ForwardedByHeader) != ""
	// The body, read once the write is to be forwarded (a write this
	// replica takes reads it itself).
	var (
		whole  []byte
		stream *unreadBody
		held   bool
		// heldBody is the whole body, once held, for this replica's own
		// handler.
		heldBody []byte
		// reuse says that the body was read here, for this replica's
		// own handler, and went nowhere else: once the handler read it,
		// its buffer serves the next write (f.held).
		reuse bool
	)
	deadline := time.Now().Add(f.opts.LeaderWait)
	// Looking the leader up is bounded by the wait too, should etcd be
	// slow to answer. Its context is made only once this replica does not
	// take the write itself: making one (a timer) for every write the
	// leader takes was 1.9% of the leader's CPU per push.
	var (
		lookupCtx context.Context
		cancel    context.CancelFunc = func() {}
	)
	defer func() { cancel() }()
	lookup := func() context.Context {
		if lookupCtx == nil {
			lookupCtx, cancel = context.WithDeadline(r.Context(), deadline)
		}
		return lookupCtx
	}
	var lastErr error
	for {
		if release, ok := f.c.BeginWrite(); ok {
			if stream != nil && stream.read {
				// This replica came to lead after part of a body too
				// large to hold went to the last leader.
				release()
				f.h.fail(w, handler, "forward", http.StatusServiceUnavailable,
					fmt.Errorf("%w: this replica came to lead after part of the body went to the last one; retry", errNoLeader))
				return
			}
			if forwarded || (held && stream != nil) {
				// A forwarding replica resends a write refused here
				// itself; part of a body too large to hold may go here
				// only once.
				f.h.ServeHTTP(w, r)
				release()
				return
			}
			if !held {
				into, _ := f.held.Get().(*[]byte)
				body, large, err := readForwardBody(r, forwardBuffer, into)
				if err != nil {
					release()
					f.h.fail(w, handler, "body", http.StatusBadRequest, fmt.Errorf("reading the request body: %w", err))
					return
				}
				if large != nil {
					// Too large to hold: taken here once, as it comes.
					r.Body = io.NopCloser(large)
					f.h.ServeHTTP(w, r)
					release()
					return
				}
				whole, heldBody, held, reuse = body, body, true, true
			}
			r.Body = io.NopCloser(bytes.NewReader(heldBody))
			refusal := &termEndCatcher{w: w, header: http.Header{}}
			f.h.ServeHTTP(refusal, r)
			release()
			if !refusal.caught {
				if reuse {
					f.putHeld(whole)
				}
				return
			}
			reuse = false // the body goes to the next leader
			// This replica's term ended before the write reached the
			// log, so nothing of it was written: it goes to the next
			// leader like a forwarded write, within the same wait.
			lastErr = errors.New("this replica's term ended before the write reached the log")
			if time.Now().Add(forwardRetry).After(deadline) || !sleepCtx(r.Context(), forwardRetry) {
				refusal.flush()
				return
			}
			continue
		}
		leader, err := f.c.Leader(lookup())
		switch {
		case err != nil:
			lastErr = err
		case leader == "":
			// None elected, or this replica, not taking writes yet (it
			// rebuilds its store at the start of a term): wait.
			lastErr = errors.New("no leader takes writes")
		case forwarded:
			// The forwarding replica's idea of the leader is stale: it
			// looks again on seeing NotLeaderHeader.
			w.Header().Set(NotLeaderHeader, leader)
			w.Header().Set("Retry-After", retryAfter)
			f.h.fail(w, handler, "not_leader", http.StatusServiceUnavailable,
				fmt.Errorf("%w here: the leader is %s now; retry", errNoLeader, leader))
			return
		default:
			if !held {
				var err error
				if whole, stream, err = readForwardBody(r, forwardBuffer, nil); err != nil {
					f.h.fail(w, handler, "body", http.StatusBadRequest, fmt.Errorf("reading the request body: %w", err))
					return
				}
				held = true
				heldBody = whole
				// Should this replica come to lead while the write
				// waits, it reads the body from here.
				r.Body = io.NopCloser(bytes.NewReader(whole))
				if stream != nil {
					r.Body = io.NopCloser(stream)
				}
			}
			var (
				body   io.Reader = http.NoBody
				length           = int64(len(whole))
				guard  *attemptBody
			)
			switch {
			case stream != nil:
				guard = &attemptBody{r: stream}
				body, length = guard, r.ContentLength
			case len(whole) > 0:
				body = bytes.NewReader(whole)
			}
			resp, err := f.attempt(r, leader, body, length, deadline)
			if err == nil {
				refusal, refused := notLeaderRefusal(resp)
				if !refused {
					f.answer(w, r, handler, leader, resp)
					if guard != nil {
						// The request's body must not be read once
						// this handler returned.
						guard.detach()
					}
					return
				}
				resp.Body.Close()
				// The cached leader is stale: look it up afresh.
				f.c.ForgetLeader(leader)
				err = fmt.Errorf("not the leader (it names %q): %s", refusal.leader, refusal.reason)
			}
			if guard != nil {
				guard.detach()
			}
			if stream != nil && stream.read {
				// Part of a body too large to hold is gone: it cannot be
				// sent again.
				f.h.fail(w, handler, "forward", http.StatusServiceUnavailable,
					fmt.Errorf("forwarding the write to the leader at %s failed: %w", leader, err))
				return
			}
			lastErr = fmt.Errorf("leader at %s: %w", leader, err)
			if errors.Is(err, syscall.ECONNREFUSED) {
				// Nothing listens at the leader's address: its process
				// is gone, and its term may end now.
				f.c.LeaderGone(lookup(), leader)
			}
			if errors.Is(err, errLeaderMoved) {
				// The new leader is known: send at once.
				continue
			}
		}
		if time.Now().Add(forwardRetry).After(deadline) || !sleepCtx(r.Context(), forwardRetry) {
			if forwarded {
				// Nothing was written here: the forwarding replica
				// may look for the leader again within its own wait.
				w.Header().Set(NotLeaderHeader, "")
			}
			w.Header().Set("Retry-After", retryAfter)
			f.h.fail(w, handler, "no_leader", http.StatusServiceUnavailable,
				fmt.Errorf("%w (waited %s; last: %v); retry", errNoLeader, f.opts.LeaderWait, lastErr))
			return
		}
	}
}

// attempt sends r to leader once, with body of length bytes (-1: unknown),
// and returns the leader's answer. The attempt ends at deadline, or as soon
// as a look at the cluster (every leaderCheck) finds that another replica
// leads (errLeaderMoved): a leader that hangs holds the write no longer than
// it takes to elect the next one. The answer's body is read within the
// same deadline.
func (f *forwarder) attempt(r *http.Request, leader string, body io.Reader, length int64, deadline time.Time) (*http.Response, error) {
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := f.send(ctx, r, leader, body, length)
		done <- result{resp, err}
	}()
	check := time.NewTicker(leaderCheck)
	defer check.Stop()
	for {
		select {
		case res := <-done:
			if res.err != nil {
				cancel()
				if errors.Is(res.err, context.DeadlineExceeded) && r.Context().Err() == nil {
					return nil, fmt.Errorf("no answer within the leader wait, the write may or may not have been applied: %w", res.err)
				}
				return nil, res.err
			}
			res.resp.Body = cancelOnClose{ReadCloser: res.resp.Body, cancel: cancel}
			return res.resp, nil
		case <-check.C:
			moved := f.leaderMoved(ctx, leader)
			if moved == nil {
				continue
			}
			cancel()
			// An answer arriving just now is dropped: the write goes to
			// the new leader, and sending it twice is harmless.
			if res := <-done; res.err == nil {
				res.resp.Body.Close()
			}
			return nil, moved
		}
	}
}

// leaderMoved returns errLeaderMoved (wrapped) when a replica other than
// leader takes writes now: this one, or another one the cluster names.
// Not knowing any leader is no reason to give up an attempt that may still
// be answered.
func (f *forwarder) leaderMoved(ctx context.Context, leader string) error {
	if release, ok := f.c.BeginWrite(); ok {
		release()
		return fmt.Errorf("%w: this replica takes writes now", errLeaderMoved)
	}
	now, err := f.c.Leader(ctx)
	if err != nil || now == "" || now == leader {
		return nil
	}
	return fmt.Errorf("%w: %s leads now", errLeaderMoved, now)
}

// refusal is a replica's answer that it did not take a write for not
// leading.
type refusal struct {
	leader string // the leader the refusing replica named, if any
	reason string // its answer's text
}

// notLeaderRefusal reports whether resp is a refusal marked with
// NotLeaderHeader. Its body, one line of text, is read into the reason.
func notLeaderRefusal(resp *http.Response) (refusal, bool) {
	values, ok := resp.Header[NotLeaderHeader]
	if !ok || resp.StatusCode != http.StatusServiceUnavailable {
		return refusal{}, false
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	return refusal{leader: values[0], reason: strings.TrimSpace(string(body))}, true
}

// cancelOnClose is the body of a leader's answer: closing it ends the
// attempt's context.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// forwardBuffer is the largest request body a follower holds in memory
// while it forwards the write, so that a write whose leader died while
// receiving it goes to the next leader instead of failing (the default
// --push.max-body-bytes is larger, but pushes are rarely over a few
// hundred KB). A larger body is streamed, and a failure mid-body is
// answered 503.
const forwardBuffer = 1 << 20

// putHeld keeps body's buffer, read by readForwardBody, for the next
// write, unless it is larger than maxPooledBody.
func (f *forwarder) putHeld(body []byte) {
	if cap(body) == 0 || cap(body) > maxPooledBody {
		return
	}
	b := body[:0]
	f.held.Put(&b)
}

// readForwardBody reads r's body when it holds at most limit bytes
// (whole), or returns a stream of it, the bytes read so far in front
// (stream). The body is read into *into when it is not nil and large
// enough.
func readForwardBody(r *http.Request, limit int, into *[]byte) (whole []byte, stream *unreadBody, err error) {
	if r.ContentLength == 0 || r.Body == nil {
		return nil, nil, nil
	}
	if r.ContentLength > int64(limit) {
		return nil, &unreadBody{r: r.Body}, nil
	}
	// The leader reads every client write it takes through here (to send
	// it on should its term end before the commit): a body of known
	// length is read into one buffer of that size rather than one grown
	// by doubling from 512 bytes.
	buf := new(bytes.Buffer)
	if into != nil {
		buf = bytes.NewBuffer((*into)[:0])
	}
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(r.Body, int64(limit)+1)); err != nil {
		return nil, nil, err
	}
	b := buf.Bytes()
	if len(b) <= limit {
		return b, nil, nil
	}
	return nil, &unreadBody{r: io.MultiReader(bytes.NewReader(b), r.Body)}, nil
}

// send forwards r to leader with body, of length bytes (-1: unknown),
// within ctx.
func (f *forwarder) send(ctx context.Context, r *http.Request, leader string, body io.Reader, length int64) (*http.Response, error) {
	out, err := http.NewRequestWithContext(ctx, r.Method, strings.TrimRight(leader, "/")+r.URL.RequestURI(), body)
	if err != nil {
		return nil, fmt.Errorf("build forwarded request: %w", err)
	}
	out.ContentLength = length
	for name, values := range r.Header {
		if !hopByHop(name) {
			out.Header[name] = values
		}
	}
	out.Header.Set(ForwardedByHeader, f.opts.Self)
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if prior := r.Header.Get("X-Forwarded-For"); prior != "" {
			host = prior + ", " + host
		}
		out.Header.Set("X-Forwarded-For", host)
	}
	return f.opts.Client.Do(out)
}

// answer waits until this replica applied the leader's commit, then passes
// the leader's answer on.
func (f *forwarder) answer(w http.ResponseWriter, r *http.Request, handler, leader string, resp *http.Response) {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxForwardedResponse))
	if err != nil {
		f.h.fail(w, handler, "forward", http.StatusServiceUnavailable,
			fmt.Errorf("reading the leader's answer from %s: %w", leader, err))
		return
	}
	if pos, err := strconv.ParseUint(resp.Header.Get(CommitPositionHeader), 10, 64); err == nil {
		ctx, cancel := context.WithTimeout(r.Context(), f.opts.ApplyWait)
		err := f.c.WaitApplied(ctx, pos)
		cancel()
		if err != nil {
			// The change is committed: say so, as the leader did. Only
			// reading it back here may not show it yet.
			f.h.logger.Warn("answering a forwarded write before this replica applied it", "position", pos, "err", err)
		}
	}
	for name, values := range resp.Header {
		if !hopByHop(name) && name != "Content-Length" {
			w.Header()[name] = values
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// writeHandler names the write r is (its route's name, as
// pushgate_rejected_requests_total labels it), or returns "" for a request
// that changes nothing.
func (h *Handler) writeHandler(r *http.Request) string {
	rows, _, _ := h.find(r)
	if rt := forMethod(rows, r.Method); rt != nil && rt.write {
		return rt.name
	}
	return ""
}

// unreadBody is a request body too large to hold, being forwarded: it
// records whether any of it was read (a write whose body is untouched can
// be sent to another leader), and leaves closing to the server.
type unreadBody struct {
	r    io.Reader
	read bool
}

func (b *unreadBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		b.read = true
	}
	return n, err
}

// errAttemptOver is read from the body of a forward attempt that is over.
var errAttemptOver = errors.New("the forward attempt is over")

// attemptBody is one forward attempt's reader of a streamed body. The
// transport may go on reading a request body after Do returned, so an
// attempt that is over is detached before the body is looked at again, or
// read by the next attempt or by this replica's own handler.
type attemptBody struct {
	mu       sync.Mutex
	r        io.Reader
	detached bool
}

func (b *attemptBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.detached {
		return 0, errAttemptOver
	}
	return b.r.Read(p)
}

// detach ends the attempt's reads, once a read under way returned.
func (b *attemptBody) detach() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.detached = true
}

// hopByHop reports whether a header belongs to one connection and is not
// forwarded.
func hopByHop(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Proxy-Connection",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Host":
		return true
	}
	return false
}

// sleepCtx waits d unless ctx ends first; it reports whether ctx is live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// termEndCatcher is the answer of this replica's own handler to a write it
// took as the leader, held back when it is a refusal marked with
// NotLeaderHeader (the term ended before the write reached the log, so
// nothing was written): the forwarder then sends the write to the next
// leader, as it does a forwarded write, instead of handing the client a
// "not the leader" answer while its wait has hardly begun. Any other
// answer goes to the client as written.
type termEndCatcher struct {
	w      http.ResponseWriter
	header http.Header
	// caught is set once the refusal was held back; its status and body
	// are kept for flush.
	caught bool
	code   int
	body   []byte
	passed bool
}

// Header returns the answer's header, copied to the client's only when
// the answer is passed on.
func (c *termEndCatcher) Header() http.Header { return c.header }

// WriteHeader holds a not-leader refusal back and passes anything else on.
func (c *termEndCatcher) WriteHeader(code int) {
	if c.caught || c.passed {
		return
	}
	if _, refused := c.header[NotLeaderHeader]; refused && code == http.StatusServiceUnavailable {
		c.caught, c.code = true, code
		return
	}
	c.pass(code)
}

// Write keeps a held refusal's body and passes anything else on.
func (c *termEndCatcher) Write(p []byte) (int, error) {
	if !c.caught && !c.passed {
		c.WriteHeader(http.StatusOK)
	}
	if c.caught {
		c.body = append(c.body, p...)
		return len(p), nil
	}
	return c.w.Write(p)
}

// Unwrap gives http.ResponseController the client's writer.
func (c *termEndCatcher) Unwrap() http.ResponseWriter { return c.w }

// pass sends the header and status to the client.
func (c *termEndCatcher) pass(code int) {
	c.passed = true
	dst := c.w.Header()
	for name, values := range c.header {
		dst[name] = values
	}
	c.w.WriteHeader(code)
}

// flush sends a held refusal after all, when no next leader took the write
// within the wait.
func (c *termEndCatcher) flush() {
	if !c.caught {
		return
	}
	c.caught = false
	c.pass(c.code)
	_, _ = c.w.Write(c.body)
}
