package store

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"

	"github.com/klauspost/compress/s2"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupcodec"
)

// recordBodies returns the protobuf body of each family of rec, in order:
// a record of version 3 holds their s2 blocks, decompressed one after the
// other into sc.records; an older one, the bodies. They are decompressed
// before any family is built, for labelsDigest.
func recordBodies(rec *groupcodec.Group, sc *scratch) ([][]byte, error) {
	size := 0
	for i := range rec.Families {
		if p := rec.Families[i].Packed; p != nil {
			n, err := s2.DecodedLen(p)
			if err != nil {
				return nil, fmt.Errorf("decompress family %q: %w", rec.Families[i].Name, err)
			}
			size += n
		}
	}
	if cap(sc.records) < size {
		sc.records = make([]byte, size)
	}
	buf := sc.records[:size]
	bodies := sc.bodies[:0]
	for i := range rec.Families {
		rf := &rec.Families[i]
		if rf.Packed == nil {
			bodies = append(bodies, rf.Metrics)
			continue
		}
		n, _ := s2.DecodedLen(rf.Packed) // read above
		body, err := s2.Decode(buf[:n:n], rf.Packed)
		if err != nil {
			return nil, fmt.Errorf("decompress family %q: %w", rf.Name, err)
		}
		bodies = append(bodies, body)
		buf = buf[n:]
	}
	sc.bodies = bodies
	return bodies, nil
}

// labelsDigest returns a digest, under seed, of the name, type and label
// sets of every family of rec (bodies are their protobuf bodies): the
// label run each metric starts with, as exposition.AppendLabelRuns appends
// it, which SameProtobufLabels compares. It is 0, "unknown", when a body
// has labels elsewhere or cannot be read. A group rebuilt from a record
// keeps it (Group.labels), so that the next record of the group, whose
// families usually hold the same series with new values, shows that in
// one comparison, and the follower applying it neither decompresses the
// families it replaces nor compares their labels (sameIdentity): 29.0-36.2
// against 34.4-37.5 us of CPU per applied push of the bench payload
// (BenchmarkApplyRepush, 4 alternating runs). Two digests equal for
// different label sets would make a follower keep the series hashes of the
// last ones: like two series of one hash, a chance of 2^-64 under a seed
// of this process's.
func labelsDigest(seed maphash.Seed, rec *groupcodec.Group, bodies [][]byte, buf *[]byte) uint64 {
	b := (*buf)[:0]
	defer func() { *buf = b }()
	for i := range rec.Families {
		rf := &rec.Families[i]
		b = binary.AppendUvarint(b, uint64(len(rf.Name)))
		b = append(b, rf.Name...)
		b = binary.AppendUvarint(b, uint64(rf.Type))
		// The runs, after their length in 4 bytes written once known.
		at := len(b)
		b = append(b, 0, 0, 0, 0)
		var ok bool
		if b, ok = exposition.AppendLabelRuns(b, bodies[i]); !ok || len(b)-at-4 > math.MaxUint32 {
			return 0
		}
		binary.LittleEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	}
	return max(maphash.Bytes(seed, b), 1)
}
