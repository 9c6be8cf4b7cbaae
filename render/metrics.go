package render

import (
	"bytes"
	"fmt"
	"math"
	"unsafe"
)

// Skeleton is the s2 block of a family's skeleton: its protobuf bytes with
// every double set to zero (exposition.ExtractValues). It is never
// modified once made, so the families that follow one another from a
// group's template share it (Cache.Skeleton): copying it into each new
// family was 1.9 KB of the 5.4 KB a push allocated at 10,000 groups of the
// bench payload, and 5% of the server's CPU per push.
type Skeleton struct {
	p *byte
	n int32
}

// NewSkeleton returns a skeleton holding a copy of block, the s2 block of
// a family's skeleton.
func NewSkeleton(block []byte) Skeleton {
	if len(block) > math.MaxInt32 {
		panic(fmt.Sprintf("render: a skeleton block of %d bytes does not fit the cache", len(block)))
	}
	if len(block) == 0 {
		return Skeleton{}
	}
	return Skeleton{p: unsafe.SliceData(bytes.Clone(block)), n: int32(len(block))}
}

// Skeleton returns the skeleton the cache's family is kept as, and whether
// it is kept as one.
func (c *Cache) Skeleton() (Skeleton, bool) {
	if c.pushed.skel == nil {
		return Skeleton{}, false
	}
	return Skeleton{p: c.pushed.skel, n: c.pushed.pbLen}, true
}

// Metrics is a family's protobuf bytes as a fill is given them: the s2
// block of the bytes (WholeBlock), or a skeleton and the value area that
// holds the values (SkeletonAndArea).
type Metrics struct {
	block []byte
	skel  Skeleton
	area  []byte
}

// WholeBlock returns the family's protobuf bytes as their s2 block, which
// a fill copies.
func WholeBlock(block []byte) Metrics { return Metrics{block: block} }

// SkeletonAndArea returns the family's protobuf bytes as skel, which a
// fill shares, and their value area (exposition.ExtractValues), which it
// copies. area is not empty and at most MaxArea bytes long.
func SkeletonAndArea(skel Skeleton, area []byte) Metrics {
	if skel.p == nil || len(area) == 0 {
		panic("render: a skeleton needs its block and a value area")
	}
	areaLen(area)
	return Metrics{skel: skel, area: area}
}

// own returns what a fill copies of m: its block, or its value area when
// it has a skeleton, which is shared.
func (m Metrics) own() []byte {
	if m.skel.p != nil {
		return m.area
	}
	return m.block
}
