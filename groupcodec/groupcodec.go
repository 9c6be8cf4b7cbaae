// Package groupcodec is the wire format of one stored group, the value the
// store writes to the journal and to the cluster's log and reads back on a
// restart or a resync. It is a pure format: it turns a Group value into
// bytes and back, and knows nothing of the store's checks, which ran when
// the group was pushed.
//
// A record is the version byte, the push and failure times, the grouping
// labels, then each pushed family's name, help, type, unit, last push time
// and metrics, and (since version 2) the last failure's reason. Strings and
// byte strings are a uvarint length then the bytes; times are varint Unix
// nanoseconds, 0 for the zero time.
//
// A family's metrics are its protobuf bytes (the repeated field 4 of
// MetricFamily). Versions 1 and 2 hold them raw, in the family's fields.
// Version 3 holds their s2 block (github.com/klauspost/compress/s2, its
// Encode's block format), the form the store keeps them in, so that neither
// writing a group nor loading one compresses or decompresses them again,
// and a record needs no second compression on its way to the cluster's log
// (see Compressed). A version 3 record is the version byte, then the head
// (everything above, each family's metrics replaced by the length of their
// block) as one s2 block, preceded by its length, then the families' blocks
// one after the other. The head is compressed because it is a third of a
// record otherwise (HELP texts, names, labels): for a group of the bench
// payload, 1,074 of a 3,015-byte record, 724 of 2,665 compressed. The whole
// version 2 record, compressed as one block as the cluster's log used to
// store it, took 2,235 bytes: one block finds the label strings every
// family repeats, and each family's own block does not.
//
// Version 4 is version 3 with each family's state (opaque bytes its writer
// keeps beside it: the OTLP ingest's delta windows) after the length of
// its block, in the head. Encode writes version 4 only for a group where
// some family has a state, so a gateway that never stored one keeps
// writing records that a version 3 reader takes.
package groupcodec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/klauspost/compress/s2"
	dto "github.com/prometheus/client_model/go"
)

// Version is the newest version of the encoding Encode writes, the first
// byte of a record. Version 2 added the last failure's reason after the
// families; version 3 holds each family's metrics as an s2 block; version 4
// adds each family's state (written only when a family has one). Decode
// still reads versions 1 to 3. A cluster records the version, so that a
// replica that cannot read what the others write does not join.
const Version = 4

// statelessVersion is the version Encode writes for a group none of whose
// families has a state.
const statelessVersion = 3

// OldestVersion is the oldest version Decode reads.
const OldestVersion = 1

// minRecordLen is the length of the shortest record of version 3: the
// version, the head's length and the head (its s2 header, a literal's tag,
// and two times, the label and family counts and the reason, one byte
// each).
const minRecordLen = 9

// Compressed reports whether b is a record whose metrics are compressed
// already (version 3), so that a store of records should keep it as it is
// rather than compress it. It is true for no s2 block of anything (an s2
// block starts with its decoded length as a uvarint, 3 only for a 3-byte
// input, whose block is 5 bytes, shorter than any record), so a store that
// compresses every other value tells the two apart on reading with it.
// Version 4 starts with 4, which an s2 block starts with only for a 4-byte
// input, whose block is 6 bytes: the same argument holds.
func Compressed(b []byte) bool {
	return len(b) >= minRecordLen && (b[0] == 3 || b[0] == 4)
}

// Group is one group as a record holds it.
type Group struct {
	// Labels are the grouping labels, in the order written (the store
	// writes them sorted by name).
	Labels []Label
	// PushTime is the time of the last successful push and FailureTime
	// that of the last failed one; the zero time is never.
	PushTime, FailureTime time.Time
	// FailureReason is the last failed push's one-line reason.
	FailureReason string
	// Families are the pushed families, without push_time_seconds and
	// push_failure_time_seconds, which the store derives from the times.
	Families []Family
}

// Label is one grouping label.
type Label struct {
	Name, Value string
}

// Family is one pushed family of a Group.
type Family struct {
	// Name, Help and Unit are the family's header; Unit is "" for none.
	Name, Help, Unit string
	// Type is the family's type.
	Type dto.MetricType
	// LastPush is when the family was last pushed.
	LastPush time.Time
	// Metrics are the family's metrics as a protobuf body (field 4 of
	// MetricFamily, repeated; exposition.AppendBody writes it), as a
	// record of version 1 or 2 holds them. Decode sets either Metrics or
	// Packed, as a slice of the record, not a copy. Encode writes Packed
	// when set, and else compresses Metrics.
	Metrics []byte
	// Packed is the s2 block (s2.Encode) of the metrics, as a record of
	// version 3 or 4 holds them.
	Packed []byte
	// State is the family's state (version 4), nil for none. Decode
	// returns a copy.
	State []byte
}

// Encode returns the record of g: of version 4 when a family has a state,
// else of version 3.
func Encode(g *Group) []byte {
	version := byte(statelessVersion)
	for _, f := range g.Families {
		if len(f.State) > 0 {
			version = Version
			break
		}
	}
	size := 32 + len(g.FailureReason)
	for _, l := range g.Labels {
		size += len(l.Name) + len(l.Value) + 4
	}
	blocks := make([][]byte, len(g.Families))
	total := 0
	for i, f := range g.Families {
		size += len(f.Name) + len(f.Help) + len(f.Unit) + len(f.State) + 32
		blocks[i] = f.Packed
		if blocks[i] == nil {
			blocks[i] = s2.Encode(nil, f.Metrics)
		}
		total += len(blocks[i])
	}
	h := make([]byte, 0, size)
	h = binary.AppendVarint(h, UnixNanos(g.PushTime))
	h = binary.AppendVarint(h, UnixNanos(g.FailureTime))
	h = binary.AppendUvarint(h, uint64(len(g.Labels)))
	for _, l := range g.Labels {
		h = appendString(h, l.Name)
		h = appendString(h, l.Value)
	}
	h = binary.AppendUvarint(h, uint64(len(g.Families)))
	for i, f := range g.Families {
		h = appendString(h, f.Name)
		h = appendString(h, f.Help)
		h = binary.AppendUvarint(h, uint64(f.Type))
		h = appendString(h, f.Unit)
		h = binary.AppendVarint(h, UnixNanos(f.LastPush))
		h = binary.AppendUvarint(h, uint64(len(blocks[i])))
		if version >= 4 {
			h = binary.AppendUvarint(h, uint64(len(f.State)))
			h = append(h, f.State...)
		}
	}
	h = appendString(h, g.FailureReason)
	head := s2.Encode(nil, h)
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(head)+total)
	b = append(b, version)
	b = binary.AppendUvarint(b, uint64(len(head)))
	b = append(b, head...)
	for _, p := range blocks {
		b = append(b, p...)
	}
	return b
}

// ErrTruncated reports a record that ends before its last field.
var ErrTruncated = errors.New("group record is truncated")

// Decode parses a record written by Encode, of this version or an earlier
// one. The families' Metrics (versions 1 and 2) or Packed (version 3) are
// slices of b, which must not change while they are in use; Decode does not
// check that a Packed block decompresses.
func Decode(b []byte) (Group, error) {
	var g Group
	r := reader{b: b}
	version := r.byte()
	if r.err == nil && (version < OldestVersion || version > Version) {
		return g, fmt.Errorf("decode group record: unknown encoding version %d", version)
	}
	// h reads the head: the record itself before version 3, and its
	// decompressed head since, the families' blocks following it in r.
	h := &r
	if version >= 3 {
		packedHead := r.bytes(int(r.uvarint()))
		if r.err != nil {
			return Group{}, fmt.Errorf("decode group record: %w", r.err)
		}
		head, release, err := decodeHead(packedHead)
		if err != nil {
			return Group{}, fmt.Errorf("decode group record: decompress its head: %w", err)
		}
		defer release()
		h = &reader{b: head}
	}
	g.PushTime = NanosTime(h.varint())
	g.FailureTime = NanosTime(h.varint())
	// Every label and family takes at least one byte, so the head's
	// length bounds the counts it announces.
	nl := h.uvarint()
	g.Labels = make([]Label, 0, min(nl, uint64(len(h.b))))
	for i := uint64(0); i < nl && h.err == nil; i++ {
		n := h.string()
		g.Labels = append(g.Labels, Label{Name: n, Value: h.string()})
	}
	nf := h.uvarint()
	g.Families = make([]Family, 0, min(nf, uint64(len(h.b))))
	for i := uint64(0); i < nf && h.err == nil; i++ {
		f := Family{Name: h.string(), Help: h.string(), Type: dto.MetricType(h.uvarint()), Unit: h.string()}
		f.LastPush = NanosTime(h.varint())
		if version >= 3 {
			f.Packed = r.bytes(int(h.uvarint()))
		} else {
			f.Metrics = h.bytes(int(h.uvarint()))
		}
		if version >= 4 {
			// A copy: the head's buffer is reused for the next record.
			if st := h.bytes(int(h.uvarint())); len(st) > 0 {
				f.State = bytes.Clone(st)
			}
		}
		g.Families = append(g.Families, f)
	}
	if version >= 2 {
		g.FailureReason = h.string()
	}
	if err := errors.Join(h.err, r.err); err != nil {
		return Group{}, fmt.Errorf("decode group record: %w", err)
	}
	return g, nil
}

// heads holds buffers for decompressed heads: Decode copies every string
// out of the head, so the buffer serves the next record (a fresh one was a
// kilobyte more allocated per group a replica applies).
var heads = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledHead is the largest head buffer kept for reuse.
const maxPooledHead = 64 << 10

// decodeHead decompresses a record's head into a pooled buffer; release
// returns the buffer, once the head is no longer read.
func decodeHead(packed []byte) (head []byte, release func(), err error) {
	n, err := s2.DecodedLen(packed)
	if err != nil {
		return nil, nil, err
	}
	if n > maxPooledHead {
		head, err = s2.Decode(nil, packed)
		return head, func() {}, err
	}
	buf := heads.Get().(*[]byte)
	if cap(*buf) < n {
		*buf = make([]byte, n, max(n, 4<<10))
	}
	if head, err = s2.Decode((*buf)[:n], packed); err != nil {
		heads.Put(buf)
		return nil, nil, err
	}
	return head, func() { heads.Put(buf) }, nil
}

// UnixNanos returns t as a record holds it: Unix nanoseconds, 0 for the
// zero time ("never"). It is the one place that maps the zero time to 0:
// the store keeps a family's last push time in this form, and writes its
// push_time_seconds and push_failure_time_seconds from it.
func UnixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// NanosTime returns the time UnixNanos returned n for.
func NanosTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// reader reads a record; the first error sticks, and every read after it
// returns the zero value.
type reader struct {
	b   []byte
	err error
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) < 1 {
		r.err = ErrTruncated
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = ErrTruncated
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = ErrTruncated
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil || n < 0 || len(r.b) < n {
		r.err = ErrTruncated
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) string() string { return string(r.bytes(int(r.uvarint()))) }
