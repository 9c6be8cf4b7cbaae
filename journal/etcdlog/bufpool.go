package etcdlog

import (
	"fmt"
	"math/bits"
	"sync"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// bufferPool holds the buffers recvCodec joins a message's frames in, in
// tiers of powers of two as gRPC's default pool has them, but handed out
// as they were returned: gRPC's default pool clears the whole capacity of
// every buffer it hands out again, though whoever takes one fills the
// length it asked for before reading it.
type bufferPool struct {
	tiers [len(poolTiers)]sync.Pool
}

// poolTiers are the exponents of the pool's buffer sizes: 256 bytes, a
// page, an HTTP/2 frame of gRPC's (16 KiB), io.Copy's buffer and 1 MiB, as
// gRPC's default pool. Larger buffers are not pooled.
var poolTiers = [...]uint8{8, 12, 14, 15, 20}

var _ mem.BufferPool = (*bufferPool)(nil)

// tier returns the index of the smallest tier that holds n bytes, and
// false when none does.
func tier(n int) (int, bool) {
	exp := uint8(0)
	if n > 1 {
		exp = uint8(bits.Len(uint(n - 1)))
	}
	for i, t := range poolTiers {
		if exp <= t {
			return i, true
		}
	}
	return 0, false
}

// Get returns a buffer of length n, its bytes as the last user left them.
func (p *bufferPool) Get(n int) *[]byte {
	i, ok := tier(n)
	if !ok {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.tiers[i].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<poolTiers[i])
	return &b
}

// Put returns a buffer Get handed out; one of a size no tier has is
// dropped.
func (p *bufferPool) Put(b *[]byte) {
	c := cap(*b)
	i, ok := tier(c)
	if !ok || c != 1<<poolTiers[i] {
		return
	}
	*b = (*b)[:c]
	p.tiers[i].Put(b)
}

// recvCodec is the codec of the Log's etcd client's calls
// (grpc.ForceCodecV2): gRPC's proto codec, except that a message that came
// in several frames is joined in a buffer of bufferPool's rather than
// gRPC's default pool. A watch event carrying a batch of replicated
// pushes is tens of kilobytes, which gRPC's pool hands out from its 1 MiB
// tier and clears whole: that clearing was 7% of a follower's CPU per
// applied push (a 3-replica cluster taking 32 clients' pushes of the
// bench payload).
type recvCodec struct {
	pool *bufferPool
}

var _ encoding.CodecV2 = recvCodec{}

// Name is the name of gRPC's proto codec, whose messages it reads.
func (recvCodec) Name() string { return "proto" }

// Marshal is the registered proto codec's.
func (recvCodec) Marshal(v any) (mem.BufferSlice, error) {
	return encoding.GetCodecV2("proto").Marshal(v)
}

// Unmarshal reads the message v from data; proto.Unmarshal copies what it
// keeps, so the buffer is returned once it is done.
func (c recvCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return encoding.GetCodecV2("proto").Unmarshal(data, v)
	}
	if len(data) == 1 {
		return wrapUnmarshal(proto.Unmarshal(data[0].ReadOnlyData(), m), v)
	}
	buf := c.pool.Get(data.Len())
	defer c.pool.Put(buf)
	data.CopyTo(*buf)
	return wrapUnmarshal(proto.Unmarshal(*buf, m), v)
}

// wrapUnmarshal gives an error of Unmarshal the message's type.
func wrapUnmarshal(err error, v any) error {
	if err != nil {
		return fmt.Errorf("unmarshal %T: %w", v, err)
	}
	return nil
}
