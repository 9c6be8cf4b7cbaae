package e2e

import (
	"io"
	"net"
	"sync"
	"testing"
)

// relay forwards TCP connections from a loopback port to another address:
// a replica's link to etcd, which a test can cut (every connection closed,
// new ones refused) and restore on the same port.
type relay struct {
	t    *testing.T
	addr string // host:port it listens on
	to   string

	mu    sync.Mutex
	ln    net.Listener // nil while cut
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// startRelay listens on a free loopback port and forwards to to (host:port);
// it stops when the test ends.
func startRelay(t *testing.T, to string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("relay: listen: %v", err)
	}
	r := &relay{t: t, addr: ln.Addr().String(), to: to, conns: map[net.Conn]struct{}{}}
	r.serve(ln)
	t.Cleanup(func() {
		r.cut()
		r.wg.Wait()
	})
	return r
}

// serve accepts on ln until it is closed.
func (r *relay) serve(ln net.Listener) {
	r.mu.Lock()
	r.ln = ln
	r.mu.Unlock()
	r.wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", r.to)
			if err != nil {
				in.Close()
				continue
			}
			if !r.track(in, out) {
				return
			}
			for _, pair := range [][2]net.Conn{{out, in}, {in, out}} {
				r.wg.Go(func() {
					_, _ = io.Copy(pair[0], pair[1])
					pair[0].Close()
					pair[1].Close()
				})
			}
		}
	})
}

// track records a connection pair, unless the relay was cut meanwhile.
func (r *relay) track(conns ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		r.conns[c] = struct{}{}
	}
	return true
}

// cut closes every connection and stops accepting new ones.
func (r *relay) cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln != nil {
		r.ln.Close()
		r.ln = nil
	}
	for c := range r.conns {
		c.Close()
	}
	clear(r.conns)
}

// restore accepts connections again on the same port.
func (r *relay) restore() {
	r.t.Helper()
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		r.t.Fatalf("relay: listen again on %s: %v", r.addr, err)
	}
	r.serve(ln)
}
