package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

// connCountingServer answers every request with 200 and counts the TCP
// connections it accepted and the times requests arrived.
type connCountingServer struct {
	*httptest.Server
	mu       sync.Mutex
	conns    int
	arrivals []time.Time
}

func newConnCountingServer(t *testing.T) *connCountingServer {
	t.Helper()
	s := &connCountingServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		s.arrivals = append(s.arrivals, time.Now())
		s.mu.Unlock()
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// TestFreshConnsOpensAConnectionPerPush checks -fresh-conns against the
// default: 20 pushes from one client use 20 connections with it and one
// without it.
func TestFreshConnsOpensAConnectionPerPush(t *testing.T) {
	for _, tc := range []struct {
		fresh bool
		want  int
	}{{false, 1}, {true, 20}} {
		srv := newConnCountingServer(t)
		base, err := url.Parse(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		bs, err := newBodies("text", 2)
		if err != nil {
			t.Fatal(err)
		}
		p := pusher{client: newHTTPClient(1, 10*time.Second, tc.fresh), base: base, method: http.MethodPut, bodies: bs}
		ts, _ := runPushes(context.Background(), p, 5, 1, 20)
		if ts[0].ok != 20 {
			t.Fatalf("fresh %v: %d pushes succeeded, want 20 (last error %v)", tc.fresh, ts[0].ok, ts[0].lastErr)
		}
		srv.mu.Lock()
		conns := srv.conns
		srv.mu.Unlock()
		if conns != tc.want {
			t.Errorf("fresh %v: %d connections for 20 pushes, want %d", tc.fresh, conns, tc.want)
		}
	}
}

// TestScrapeIntervalSpacesScrapes checks that a scraper with an interval
// starts scrape i no earlier than i intervals after the run began, as
// Prometheus spaces its scrapes.
func TestScrapeIntervalSpacesScrapes(t *testing.T) {
	const interval = 40 * time.Millisecond
	srv := newConnCountingServer(t)
	s := scraper{client: newHTTPClient(1, 10*time.Second, false), url: srv.URL + "/metrics", accept: resolveAccept("text")}
	start := time.Now()
	ts, _, _ := runScrapes(context.Background(), s, 1, 4, interval)
	if ts[0].requests != 4 || ts[0].errors != 0 {
		t.Fatalf("%d scrapes, %d errors (last %v); want 4 and none", ts[0].requests, ts[0].errors, ts[0].lastErr)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for i, at := range srv.arrivals {
		if got, want := at.Sub(start), time.Duration(i)*interval; got < want {
			t.Errorf("scrape %d arrived %v after the start, want at least %v", i, got, want)
		}
	}
}

func TestScrapeIntervalMustNotBeNegative(t *testing.T) {
	if err := checkInterval(-time.Second); !errors.Is(err, errUsage) {
		t.Errorf("checkInterval(-1s) = %v, want a usage error", err)
	}
	for _, d := range []time.Duration{0, time.Second} {
		if err := checkInterval(d); err != nil {
			t.Errorf("checkInterval(%v) = %v, want nil", d, err)
		}
	}
}

// TestPushesSpreadOverSeveralURLsByGroup checks that a pusher given a
// cluster's replicas sends each group's pushes to one of them, all of them
// used.
func TestPushesSpreadOverSeveralURLsByGroup(t *testing.T) {
	var servers []*connCountingServer
	var bases []*url.URL
	for range 3 {
		srv := newConnCountingServer(t)
		u, err := url.Parse(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		servers, bases = append(servers, srv), append(bases, u)
	}
	bs, err := newBodies("text", 2)
	if err != nil {
		t.Fatal(err)
	}
	p := pusher{client: newHTTPClient(2, 10*time.Second, false), base: bases[0], spread: bases, method: http.MethodPut, bodies: bs}
	ts, _ := runFill(context.Background(), p, 0, 9, 2)
	if ok := ts[0].ok + ts[1].ok; ok != 9 {
		t.Fatalf("%d of 9 pushes succeeded", ok)
	}
	for i, srv := range servers {
		srv.mu.Lock()
		n := len(srv.arrivals)
		srv.mu.Unlock()
		if n != 3 {
			t.Errorf("replica %d received %d of the 9 groups, want 3", i, n)
		}
	}
}

func TestProcStatCPUTimeIsUserPlusSystemTicks(t *testing.T) {
	// A command name with a space and a parenthesis, then the fields of
	// proc(5): utime 250 and stime 50 ticks.
	line := []byte("1234 (push gate) x) S 1 1234 1234 0 -1 4194560 2000 0 0 0 250 50 0 0 20 0 8 0 100 0 0\n")
	got, err := parseProcStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if got != 3 {
		t.Errorf("CPU %v s, want 3 (300 ticks)", got)
	}
	if _, err := parseProcStat([]byte("1234 (x) S 1 2")); err == nil {
		t.Error("a short line parsed")
	}
}
