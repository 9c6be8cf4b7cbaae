package exposition

import (
	dto "github.com/prometheus/client_model/go"
)

// arena hands out pointers into arrays it allocates in chunks, so that a
// body costs a few allocations per kind of object instead of one per object.
// Chunks start small and double, and never exceed the number of lines left
// (hint), so a small body does not pay for a large chunk and at most about
// half of the memory is unused.
//
// Once the caller has released the families of a body, the chunks are
// zeroed and handed out again for the next body (rewind): a pooled parser
// then decodes a push of the batch-job payload without allocating any dto
// object. Families that are never released keep the chunks, and the arena
// with them.
type arena[T any] struct {
	chunks [][]T // every chunk allocated
	used   int   // chunks[:used] have been handed out from
	free   []T   // the rest of chunks[used-1]
	size   int   // size of the last chunk allocated
}

// Chunk sizes run from minChunk to maxChunk.
const (
	minChunk = 8
	maxChunk = 256
)

// grow makes free hold at least n objects: the next kept chunk that is big
// enough, or a new one.
func (a *arena[T]) grow(n, hint int) {
	for a.used < len(a.chunks) {
		c := a.chunks[a.used]
		a.used++
		if len(c) >= n {
			a.free = c
			return
		}
	}
	a.size = min(max(a.size*2, minChunk), maxChunk)
	c := make([]T, max(min(a.size, hint), n, 1))
	a.chunks = append(a.chunks, c)
	a.used = len(a.chunks)
	a.free = c
}

// next returns a pointer to a zero T; hint estimates how many more will be
// needed.
func (a *arena[T]) next(hint int) *T {
	if len(a.free) == 0 {
		a.grow(1, hint)
	}
	x := &a.free[0]
	a.free = a.free[1:]
	return x
}

// slice returns a slice of n zero Ts with capacity n.
func (a *arena[T]) slice(n, hint int) []T {
	if n > len(a.free) {
		a.grow(n, hint)
	}
	s := a.free[:n:n]
	a.free = a.free[n:]
	return s
}

// rewind makes the chunks handed out since the last rewind available again.
// The caller must no longer use anything they held. Each used object is
// zeroed, by recycle when it is not nil (which may keep slice capacity the
// object owns), else by clear.
func (a *arena[T]) rewind(recycle func(*T)) {
	for _, c := range a.chunks[:a.used] {
		if recycle == nil {
			clear(c)
			continue
		}
		for i := range c {
			recycle(&c[i])
		}
	}
	a.used, a.free = 0, nil
}

// capacity returns the number of objects the kept chunks hold.
func (a *arena[T]) capacity() int {
	n := 0
	for _, c := range a.chunks {
		n += len(c)
	}
	return n
}

// The boxes below are shared by the text parser and the protobuf reader.
// A dto object points to its strings and numbers; a box holds the object
// together with the fields it points to, so that one arena slot carries
// both and a label pair costs no allocation of its own.

// labelBox holds one label pair and its two strings.
type labelBox struct {
	lp          dto.LabelPair
	name, value string
}

// counterBox, gaugeBox and untypedBox hold one value and its float.
type counterBox struct {
	c dto.Counter
	v float64
}

type gaugeBox struct {
	g dto.Gauge
	v float64
}

type untypedBox struct {
	u dto.Untyped
	v float64
}

// quantileBox holds one quantile and its two floats.
type quantileBox struct {
	q            dto.Quantile
	quantile, vl float64
}

// bucketBox holds one histogram bucket and its numbers.
type bucketBox struct {
	b          dto.Bucket
	upper      float64
	count      uint64
	countFloat float64
}
