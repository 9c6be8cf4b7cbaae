package etcdlog

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The addresses the tracker files connections under must be those the
// etcd client has gRPC dial (its internal endpoint.Interpret), or a hung
// member's connections would not be found.
func TestDialAddressIsWhatTheClientDials(t *testing.T) {
	for ep, want := range map[string]string{
		"http://127.0.0.1:2379":   "127.0.0.1:2379",
		"https://etcd-0:2379":     "etcd-0:2379",
		"10.0.0.44:437":           "10.0.0.44:437",
		"unix:///run/etcd.sock":   "unix:///run/etcd.sock",
		"unixs:///run/etcd.sock":  "unix:///run/etcd.sock",
		"unix://localhost:1234":   "unix:localhost:1234",
		"unix:etcd.sock":          "unix:etcd.sock",
		"unixs://localhost:12345": "unix:localhost:12345",
	} {
		if got := dialAddress(ep); got != want {
			t.Errorf("dialAddress(%q) = %q, want %q", ep, got, want)
		}
	}
}

// closeUsed closes the connections to an address that received anything
// (gRPC used them) and leaves one still waiting for its first bytes (a
// connection to a hung member, which gRPC has not used).
func TestCloseUsedClosesOnlyConnectionsThatReceived(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 2)
	go func() {
		for range 2 {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	tr := newConnTracker()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addr := ln.Addr().String()
	used, err := tr.dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer used.Close()
	s1 := <-accepted
	defer s1.Close()
	waiting, err := tr.dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	s2 := <-accepted
	defer s2.Close()
	if _, err := s1.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(used, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}

	if n := tr.closeUsed("127.0.0.2:1"); n != 0 {
		t.Errorf("closeUsed of another address closed %d connections", n)
	}
	if n := tr.closeUsed(addr); n != 1 {
		t.Fatalf("closeUsed closed %d connections, want the one that received", n)
	}
	if _, err := used.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("reading the used connection after closeUsed: %v, want net.ErrClosed", err)
	}
	if _, err := waiting.Write([]byte("y")); err != nil {
		t.Errorf("the waiting connection was closed: %v", err)
	}
	tr.mu.Lock()
	n := len(tr.conns)
	tr.mu.Unlock()
	if n != 1 {
		t.Errorf("the tracker holds %d connections, want the one still open", n)
	}
}

// settle tells, from a later attempt's failed guard, whether an earlier
// attempt of unknown outcome committed.
func TestSettleAnAttemptSentAgain(t *testing.T) {
	l := &Log{keys: keysFor("/p/")}
	tm := &term{key: "/p/leader/1", rev: 10, lease: 0x1, head: 20}
	const seq = 7
	kv := func(key, value string, create, mod int64) []*mvccpb.KeyValue {
		return []*mvccpb.KeyValue{{Key: []byte(key), Value: []byte(value), CreateRevision: create, ModRevision: mod}}
	}
	resp := func(key, head []*mvccpb.KeyValue) *clientv3.TxnResponse {
		return &clientv3.TxnResponse{Responses: []*pb.ResponseOp{
			{Response: &pb.ResponseOp_ResponseRange{ResponseRange: &pb.RangeResponse{Kvs: key}}},
			{Response: &pb.ResponseOp_ResponseRange{ResponseRange: &pb.RangeResponse{Kvs: head}}},
		}}
	}
	doubt := context.DeadlineExceeded
	for _, tc := range []struct {
		name          string
		resp          *clientv3.TxnResponse
		wantRev       int64
		wantAmbiguous bool
		wantIs        error
	}{
		{
			name:    "head holds this batch: an earlier attempt committed, at head's revision",
			resp:    resp(kv(tm.key, "url", 10, 10), kv("/p/head", headValue(tm.lease, seq), 3, 21)),
			wantRev: 21,
		},
		{
			name:    "head holds this batch though the key is gone since: it committed before",
			resp:    resp(nil, kv("/p/head", headValue(tm.lease, seq), 3, 21)),
			wantRev: 21,
		},
		{
			name:   "head unmoved and the key gone: no attempt committed, nor ever can",
			resp:   resp(nil, kv("/p/head", headValue(tm.lease, seq-1), 3, 20)),
			wantIs: ErrNotLeader,
		},
		{
			name:          "head moved by another writer: an earlier attempt may have committed before",
			resp:          resp(nil, kv("/p/head", headValue(0x2, 1), 3, 25)),
			wantAmbiguous: true,
			wantIs:        ErrAmbiguous,
		},
		{
			name:          "head deleted: unknown",
			resp:          resp(kv(tm.key, "url", 10, 10), nil),
			wantAmbiguous: true,
			wantIs:        ErrAmbiguous,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rev, ambiguous, err := l.settle(tm, seq, tc.resp, doubt)
			switch {
			case tc.wantIs == nil && (err != nil || rev != tc.wantRev):
				t.Errorf("settle = %d, %v; want committed at %d", rev, err, tc.wantRev)
			case tc.wantIs != nil && (!errors.Is(err, tc.wantIs) || ambiguous != tc.wantAmbiguous):
				t.Errorf("settle = %d, ambiguous %v, %v; want ambiguous %v, wrapping %v", rev, ambiguous, err, tc.wantAmbiguous, tc.wantIs)
			case !tc.wantAmbiguous && errors.Is(err, ErrAmbiguous):
				t.Errorf("settle = %v: ambiguous, want definite", err)
			}
		})
	}
}
