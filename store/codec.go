package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/limits"
)

// groupCodecVersion is the first byte of an encoded group. Version 2 adds
// the last failure's reason after the families; version 1 records (without
// it) are still read.
const groupCodecVersion = 2

// CodecVersion is the version of the group encoding the store writes: the
// values of the journal and of the cluster's log. A cluster records it, so
// that a replica that encodes differently does not join.
const CodecVersion = groupCodecVersion

// encodeGroup serializes a group for the journal: version, push and failure
// times, grouping labels, then each pushed family's header and its protobuf
// metric bytes. The synthetic time families are rebuilt from the times.
func encodeGroup(g *Group) []byte {
	size := 32
	for _, f := range g.families {
		size += 2*len(f.packed) + len(f.Name()) + len(f.Help()) + 32
	}
	b := make([]byte, 0, size)
	b = append(b, groupCodecVersion)
	b = binary.AppendVarint(b, timeNanos(g.pushTime))
	b = binary.AppendVarint(b, timeNanos(g.failTime))
	b = binary.AppendUvarint(b, uint64(len(g.key.labels)))
	for _, l := range g.key.labels {
		b = appendString(b, l.Name)
		b = appendString(b, l.Value)
	}
	n := 0
	for name := range g.families {
		if name != PushTimeName && name != PushFailureTimeName {
			n++
		}
	}
	b = binary.AppendUvarint(b, uint64(n))
	for _, f := range g.Families() {
		name := f.Name()
		if name == PushTimeName || name == PushFailureTimeName {
			continue
		}
		b = appendString(b, name)
		b = appendString(b, f.Help())
		b = binary.AppendUvarint(b, uint64(f.typ))
		b = appendString(b, f.Unit())
		b = binary.AppendVarint(b, f.lastPush)
		metrics, err := f.metrics()
		if err != nil {
			// packed was written by s2.Encode in this process; a failure
			// to decode it is memory corruption, not bad input.
			panic("store: " + err.Error())
		}
		b = binary.AppendUvarint(b, uint64(len(metrics)))
		b = append(b, metrics...)
	}
	return appendString(b, g.failReason)
}

// storedGroup is a decoded journal record: the key, times and families.
type storedGroup struct {
	key        GroupKey
	pushTime   time.Time
	failTime   time.Time
	failReason string
	families   []storedFamily
}

// storedFamily is one family of a stored group: mf, and either mf's
// metrics or, read from the journal, their protobuf bytes (field 4 of
// MetricFamily, repeated) still encoded.
type storedFamily struct {
	mf       *dto.MetricFamily
	metrics  []byte
	lastPush time.Time
}

// decodeGroup parses a record written by encodeGroup.
func decodeGroup(b []byte) (storedGroup, error) {
	var sg storedGroup
	r := reader{b: b}
	version := r.byte()
	if version != 1 && version != groupCodecVersion {
		return sg, fmt.Errorf("unknown group encoding version %d", version)
	}
	sg.pushTime = nanosTime(r.varint())
	sg.failTime = nanosTime(r.varint())
	nl := r.uvarint()
	labels := make(map[string]string, nl)
	for i := uint64(0); i < nl && r.err == nil; i++ {
		n := r.string()
		labels[n] = r.string()
	}
	sg.key = NewGroupKey(labels)
	nf := r.uvarint()
	for i := uint64(0); i < nf && r.err == nil; i++ {
		mf := &dto.MetricFamily{Name: proto.String(r.string())}
		if h := r.string(); h != "" {
			mf.Help = proto.String(h)
		}
		mf.Type = dto.MetricType(r.uvarint()).Enum()
		if u := r.string(); u != "" {
			mf.Unit = proto.String(u)
		}
		last := nanosTime(r.varint())
		metrics := r.bytes(int(r.uvarint()))
		if r.err != nil {
			break
		}
		sg.families = append(sg.families, storedFamily{mf: mf, metrics: metrics, lastPush: last})
	}
	if version >= 2 && r.err == nil {
		sg.failReason = r.string()
	}
	if r.err != nil {
		return sg, r.err
	}
	return sg, nil
}

// restoreGroup installs a group read from outside (an imported reference
// file) after running the same checks as a push.
func (s *Store) restoreGroup(sg storedGroup) error {
	mfs := make([]*dto.MetricFamily, len(sg.families))
	for i, sf := range sg.families {
		mfs[i] = sf.mf
	}
	// No limits: a group already acknowledged is never dropped because a
	// limit was lowered since; the running totals still count it.
	prepared, err := prepare(sg.key, mfs, s.opts.UTF8Names, limits.Limits{}, s.seed)
	if err != nil {
		return err
	}
	g := &Group{key: sg.key, pushTime: sg.pushTime, failTime: sg.failTime, failReason: sg.failReason, families: make(map[string]*Family, len(prepared)+2)}
	enc := s.render.encoding()
	var sc scratch
	for i, pf := range prepared {
		f, err := newFamily(pf, sg.families[i].lastPush, enc, false, &sc)
		if err != nil {
			return err
		}
		g.families[f.Name()] = f
	}
	return s.installChecked(g, s.addTimeFamilies(g, prepared, enc, &sc))
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

// reader decodes the group encoding; the first error sticks.
type reader struct {
	b   []byte
	err error
}

var errShort = errors.New("group record is truncated")

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) < 1 {
		r.err = errShort
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
		r.err = errShort
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
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil || n < 0 || len(r.b) < n {
		r.err = errShort
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) string() string { return string(r.bytes(int(r.uvarint()))) }
