package etcdlog

import (
	"bytes"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

func TestBufferPoolHandsOutTheLengthAskedInTheTierThatHoldsIt(t *testing.T) {
	var p bufferPool
	for _, tc := range []struct{ n, cap int }{
		{0, 256}, {1, 256}, {256, 256}, {257, 4096}, {4096, 4096}, {4097, 16384},
		{16384, 16384}, {20000, 32768}, {32769, 1 << 20}, {1 << 20, 1 << 20}, {1<<20 + 1, 1<<20 + 1},
	} {
		b := p.Get(tc.n)
		if len(*b) != tc.n || cap(*b) != tc.cap {
			t.Errorf("Get(%d): length %d, capacity %d; want %d, %d", tc.n, len(*b), cap(*b), tc.n, tc.cap)
		}
		p.Put(b)
	}
}

func TestBufferPoolReusesWhatWasPut(t *testing.T) {
	var p bufferPool
	b := p.Get(100)
	(*b)[0] = 42
	first := &(*b)[:1][0]
	p.Put(b)
	// sync.Pool may drop what was put (never within one goroutine without
	// a collection in between, in practice): look a few times.
	for range 3 {
		c := p.Get(10)
		if &(*c)[:1][0] == first {
			if len(*c) != 10 || (*c)[0] != 42 {
				t.Fatalf("reused buffer: length %d, first byte %d; want 10, 42 (not cleared)", len(*c), (*c)[0])
			}
			return
		}
		p.Put(c)
	}
	t.Skip("the pool dropped the buffer (a collection ran)")
}

func TestBufferPoolDropsBuffersOfOtherSizes(t *testing.T) {
	var p bufferPool
	odd := make([]byte, 300)
	p.Put(&odd)
	for range 3 {
		if b := p.Get(300); cap(*b) != 4096 {
			t.Fatalf("Get(300) after putting a 300-byte buffer: capacity %d, want 4096", cap(*b))
		}
	}
}

func TestRecvCodecReadsAMessageOfManyFramesAsGRPCsOwnDoes(t *testing.T) {
	want := &etcdserverpb.WatchResponse{Header: &etcdserverpb.ResponseHeader{Revision: 7}}
	for i := range 40 {
		want.Events = append(want.Events, &mvccpb.Event{Kv: &mvccpb.KeyValue{
			Key: fmt.Appendf(nil, "pushgate/groups/g%d", i), Value: bytes.Repeat([]byte{byte(i)}, 3000), ModRevision: 7,
		}})
	}
	wire, err := proto.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	codec := recvCodec{pool: &bufferPool{}}
	for _, frame := range []int{len(wire), 16 << 10, 1000} {
		var data mem.BufferSlice
		for b := wire; len(b) > 0; {
			n := min(frame, len(b))
			data = append(data, mem.SliceBuffer(b[:n]))
			b = b[n:]
		}
		for range 2 { // the second time from a buffer the pool holds
			got := &etcdserverpb.WatchResponse{}
			if err := codec.Unmarshal(data, got); err != nil {
				t.Fatalf("frames of %d bytes: %v", frame, err)
			}
			if !proto.Equal(got, want) {
				t.Fatalf("frames of %d bytes: the message read differs from the one written", frame)
			}
		}
	}
	if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire[:len(wire)-1]), mem.SliceBuffer(nil)}, &etcdserverpb.WatchResponse{}); err == nil {
		t.Error("a message cut short was read")
	}
}
