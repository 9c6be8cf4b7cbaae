// Package groupcodec is the wire format of one stored group, the value the
// store writes to the journal and to the cluster's log and reads back on a
// restart or a resync. It is a pure format: it turns a Group value into
// bytes and back, and knows nothing of the store's checks, which ran when
// the group was pushed.
//
// A record is the version byte, the push and failure times, the grouping
// labels, then each pushed family's name, help, type, unit, last push time
// and protobuf metrics, and (since version 2) the last failure's reason.
// Strings and byte strings are a uvarint length then the bytes; times are
// varint Unix nanoseconds, 0 for the zero time.
package groupcodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// Version is the version of the encoding Encode writes, the first byte of
// a record. Version 2 adds the last failure's reason after the families;
// Decode still reads version 1 records (without it). A cluster records the
// version, so that a replica that encodes differently does not join.
const Version = 2

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
	// MetricFamily, repeated; exposition.AppendBody writes it). Decode
	// returns a slice of the record, not a copy.
	Metrics []byte
}

// Encode returns the record of g.
func Encode(g *Group) []byte {
	size := 32 + len(g.FailureReason)
	for _, l := range g.Labels {
		size += len(l.Name) + len(l.Value) + 4
	}
	for _, f := range g.Families {
		size += len(f.Metrics) + len(f.Name) + len(f.Help) + len(f.Unit) + 32
	}
	b := make([]byte, 0, size)
	b = append(b, Version)
	b = binary.AppendVarint(b, timeNanos(g.PushTime))
	b = binary.AppendVarint(b, timeNanos(g.FailureTime))
	b = binary.AppendUvarint(b, uint64(len(g.Labels)))
	for _, l := range g.Labels {
		b = appendString(b, l.Name)
		b = appendString(b, l.Value)
	}
	b = binary.AppendUvarint(b, uint64(len(g.Families)))
	for _, f := range g.Families {
		b = appendString(b, f.Name)
		b = appendString(b, f.Help)
		b = binary.AppendUvarint(b, uint64(f.Type))
		b = appendString(b, f.Unit)
		b = binary.AppendVarint(b, timeNanos(f.LastPush))
		b = binary.AppendUvarint(b, uint64(len(f.Metrics)))
		b = append(b, f.Metrics...)
	}
	return appendString(b, g.FailureReason)
}

// ErrTruncated reports a record that ends before its last field.
var ErrTruncated = errors.New("group record is truncated")

// Decode parses a record written by Encode, of this version or an earlier
// one. The families' Metrics are slices of b, which must not change while
// they are in use.
func Decode(b []byte) (Group, error) {
	var g Group
	r := reader{b: b}
	version := r.byte()
	if r.err == nil && version != 1 && version != Version {
		return g, fmt.Errorf("decode group record: unknown encoding version %d", version)
	}
	g.PushTime = nanosTime(r.varint())
	g.FailureTime = nanosTime(r.varint())
	// Every label and family takes at least one byte, so the record's
	// length bounds the counts it announces.
	nl := r.uvarint()
	g.Labels = make([]Label, 0, min(nl, uint64(len(r.b))))
	for i := uint64(0); i < nl && r.err == nil; i++ {
		n := r.string()
		g.Labels = append(g.Labels, Label{Name: n, Value: r.string()})
	}
	nf := r.uvarint()
	g.Families = make([]Family, 0, min(nf, uint64(len(r.b))))
	for i := uint64(0); i < nf && r.err == nil; i++ {
		f := Family{Name: r.string(), Help: r.string(), Type: dto.MetricType(r.uvarint()), Unit: r.string()}
		f.LastPush = nanosTime(r.varint())
		f.Metrics = r.bytes(int(r.uvarint()))
		g.Families = append(g.Families, f)
	}
	if version >= 2 {
		g.FailureReason = r.string()
	}
	if r.err != nil {
		return Group{}, fmt.Errorf("decode group record: %w", r.err)
	}
	return g, nil
}

func timeNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func nanosTime(n int64) time.Time {
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
