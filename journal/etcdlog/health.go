package etcdlog

import (
	"context"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// A hung etcd member (SIGSTOP, a stuck disk or VM) keeps its connections
// open. The etcd client spreads requests over all members (gRPC round
// robin), so a third of them went to the hung member and waited for their
// timeout, and a stream opened there (a watch, the lease keepalives) waited
// for gRPC's keepalive to give up on the connection: 10s and 5s, and etcd
// refuses keepalive pings more often than every 5s (a 5s+1s keepalive alone
// measured the same as before: 6.0-6.2s with 6s hangs). A commit that timed
// out ended the term, and so did the session, lost while its keepalives
// went unanswered. Measured with 6s hangs (etcdtest's
// TestPushesGoOnWhileOneEtcdMemberHangs and
// TestPushesGoOnWhileAnEtcdProcessIsStopped): no push was acknowledged
// for 6.0-6.5s with one member's link paused (9 of 9 runs), for 5.1-10.0s
// with etcd's leader process stopped (4 runs), 6.0-6.1s with a follower's.
//
// So, when it has more than one endpoint, the Log asks every member for its
// status every memberProbeInterval, each on a connection of its own. When a
// member does not answer within memberProbeTimeout, or answers that it has
// no leader, while another member answers with one, the Log closes the
// etcd client's connections to that member that had been established: the
// requests in flight there fail at once (reads are retried by the client,
// a commit by the Log: see commitAttempt), the streams resume on another
// member, and the client sends the member nothing more until a new
// connection to it completes, which a hung member's does not until it
// resumes. When no member answers, the Log closes nothing: the fault is not
// one member's. With these probes, commits sent again and the lease renewed
// by the Log (see session), the longest stretch with no push acknowledged
// was 1.1-1.5s with a link paused, 1.5-2.3s with etcd's leader stopped
// (its peers take 1-2s to elect another) and 1.3-1.5s with a follower
// stopped, no push failing during the hang (4 runs each); 1.0-2.4s with
// etcd's leader stopped for 12s (before: 11.0-12.1s). The probes alone gave 1.1-2.0s
// with a link paused, each hang ending the term (4 pushes failed) and
// rebuilding the leader's store.
const (
	memberProbeInterval = 500 * time.Millisecond
	memberProbeTimeout  = time.Second
)

// connTracker is the etcd client's dialer when it has several endpoints:
// it keeps the connections it made, by the address dialed, so that those
// to a member that stopped answering can be closed.
//
// Like any custom gRPC dialer, it dials directly: no HTTP proxy named by
// the environment (HTTPS_PROXY) is used; and gRPC sets no TCP_USER_TIMEOUT
// on a connection that is not a *net.TCPConn, which the member probes make
// up for (they notice an unreachable member within 1.5s).
type connTracker struct {
	mu    sync.Mutex
	conns map[*trackedConn]struct{}
}

func newConnTracker() *connTracker {
	return &connTracker{conns: make(map[*trackedConn]struct{})}
}

// trackedConn is one connection to a member. It remembers whether it has
// received anything: a connection still waiting for a hung member's first
// bytes was never used by gRPC, and is left to its connect timeout.
type trackedConn struct {
	net.Conn
	addr    string
	tracker *connTracker
	read    atomic.Bool
	once    sync.Once // removes it from the tracker
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.read.Load() {
		c.read.Store(true)
	}
	return n, err
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.tracker.mu.Lock()
		delete(c.tracker.conns, c)
		c.tracker.mu.Unlock()
	})
	return c.Conn.Close()
}

// dial connects to addr as gRPC's own dialer would: addr is a host:port,
// or a unix socket as "unix:path" or "unix:///absolute/path".
func (t *connTracker) dial(ctx context.Context, addr string) (net.Conn, error) {
	network, address := "tcp", addr
	if rest, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, address = "unix", strings.TrimPrefix(rest, "//")
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, addr: addr, tracker: t}
	t.mu.Lock()
	t.conns[tc] = struct{}{}
	t.mu.Unlock()
	return tc, nil
}

// closeUsed closes the connections to addr that have received anything,
// and returns how many.
func (t *connTracker) closeUsed(addr string) int {
	t.mu.Lock()
	var used []*trackedConn
	for c := range t.conns {
		if c.addr == addr && c.read.Load() {
			used = append(used, c)
		}
	}
	t.mu.Unlock()
	for _, c := range used {
		c.Close()
	}
	return len(used)
}

// dialAddress is the address the etcd client has gRPC dial for endpoint ep
// (as the client's internal endpoint.Interpret does): the host:port of an
// http(s) URL, "unix:path" or "unix:///absolute/path" for a socket, else
// ep itself.
func dialAddress(ep string) string {
	for _, scheme := range []string{"unix", "unixs"} {
		rest, ok := strings.CutPrefix(ep, scheme+":")
		if !ok {
			continue
		}
		if path, ok := strings.CutPrefix(rest, "//"); ok {
			if strings.HasPrefix(path, "/") {
				return "unix://" + path
			}
			return "unix:" + path
		}
		return "unix:" + rest
	}
	if strings.Contains(ep, "://") {
		if u, err := url.Parse(ep); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
			return u.Host
		}
	}
	return ep
}

// probeMembers probes every member every memberProbeInterval and closes
// the connections to one that does not answer while another does (see
// memberProbeInterval), until ctx ends.
func (l *Log) probeMembers(ctx context.Context, tracker *connTracker) {
	type member struct {
		endpoint, addr string
		conn           *grpc.ClientConn
		healthy        bool
	}
	var members []*member
	defer func() {
		for _, m := range members {
			m.conn.Close()
		}
	}()
	for _, ep := range l.cfg.Endpoints {
		conn, err := l.client.Dial(ep)
		if err != nil {
			l.log.Warn("cannot probe the etcd member; a hang of it will stall requests sent to it", "endpoint", ep, "err", err)
			continue
		}
		members = append(members, &member{endpoint: ep, addr: dialAddress(ep), conn: conn, healthy: true})
	}
	answered := make([]bool, len(members))
	for {
		start := time.Now()
		var wg sync.WaitGroup
		for i, m := range members {
			wg.Go(func() {
				pctx, cancel := context.WithTimeout(ctx, memberProbeTimeout)
				defer cancel()
				resp, err := pb.NewMaintenanceClient(m.conn).Status(pctx, &pb.StatusRequest{})
				answered[i] = err == nil && resp.Leader != 0
			})
		}
		wg.Wait()
		if ctx.Err() != nil {
			return
		}
		some := false
		for _, a := range answered {
			some = some || a
		}
		for i, m := range members {
			switch {
			case answered[i] && !m.healthy:
				m.healthy = true
				l.log.Info("the etcd member answers again", "endpoint", m.endpoint)
			case !answered[i] && some:
				if n := tracker.closeUsed(m.addr); n > 0 || m.healthy {
					l.log.Warn("the etcd member does not answer, or has no leader, while another does: closed the client's connections to it, so that requests go to the others",
						"endpoint", m.endpoint, "timeout", memberProbeTimeout, "connections", n)
				}
				m.healthy = false
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(memberProbeInterval - time.Since(start)):
		}
	}
}
