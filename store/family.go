package store

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"
	"unique"

	"github.com/klauspost/compress/s2"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupcodec"
)

// Family is one stored metric family of one group. It is immutable once
// installed, except for its render cache, which is filled atomically.
//
// The canonical form is the protobuf encoding of the family's metrics (the
// repeated field 4 of io.prometheus.client.MetricFamily), kept
// s2-compressed: it is what the journal stores, what the API decodes, and
// what a protobuf scrape decompresses as it streams.
// Keeping bytes instead of the decoded dto objects is what keeps the store
// small: a decoded family costs several times its wire size in pointers.
// Compressing them halves them again: at 10,000 groups of the bench payload
// the protobuf bytes are 41.4 MB raw and 20.5 MB as s2 blocks, and s2
// decodes them at about 3 GB/s on this machine.
//
// Names, HELP texts and units are interned: every group of a batch job pushes
// the same ones, and at 10,000 groups of the bench payload their copies took
// 11 MB. A unique.Handle is also half the size of a string header.
type Family struct {
	meta unique.Handle[familyMeta]
	// lastPush is the push time as a record holds it
	// (groupcodec.UnixNanos: 0 for never): a time.Time is three words and
	// holds a pointer.
	lastPush int64
	typ      dto.MetricType
	// plain is true when every name in the family is a legacy name
	// (exposition.LegacyNames), so its rendering does not depend on the
	// scrape's escaping scheme and can be cached per encoding.
	plain bool
	// packed holds the s2 block of the protobuf bytes of field 4 for every
	// metric.
	packed []byte
	// series holds one hash per metric (name plus sorted labels), for the
	// consistency index.
	series []uint64
	// labels holds the distinct label names under the UTF-8 name rules,
	// for the index's label check; nil under the legacy rules.
	labels []string
	// pushed is the text or OpenMetrics body the push rendered, in the
	// encoding last scraped, so that a scrape of unchanged data copies bytes
	// (DESIGN §6). It is kept in the family itself rather than behind a
	// pointer: a separate TextBody per family was 7.2 MB of the 106 MB heap
	// at 10,000 groups, and one more cache miss per family per scrape.
	pushed textRef
	// text caches a body the push did not render: one of another encoding,
	// rendered by a scrape in that encoding, or the pushed body once a gzip
	// scrape has seen it or given it a deflate segment. Only one encoding is
	// kept, to bound memory. Protobuf bodies have a slot of their own, so
	// that a gateway scraped in both formats does not re-render every family
	// on each switch (8.7 s for a text scrape after a protobuf one at 10,000
	// groups, when protobuf bodies shared this cache).
	text atomic.Pointer[TextBody]
	// unpacked caches the decompressed protobuf bytes between protobuf
	// scrapes: decompressing on every scrape made a protobuf scrape of
	// 10,000 groups 2.5x slower. A text scrape drops it, so a gateway that
	// is not scraped by protobuf holds only packed.
	unpacked atomic.Pointer[[]byte]
	// slot is the scrape-order slot that showed this family when it was
	// installed; set and read by install only, under the store's lock.
	slot *slot
	// state is the opaque state its push gave the family (Push.States,
	// see headstate.go), nil for none. A pointer: one word in every family
	// instead of a slice's three, for what few families have.
	state *[]byte
}

// textRef is a plain family's text body in one encoding, as the push
// rendered it: the s2 block, the body's length and its encoding. The
// family keeps it inline: following each family to a separate TextBody
// cost two cache misses per family, 18% of a 10,000-group text scrape. A
// copy in each slot, so that a text scrape would not read the families
// either, was measured and removed: 15 alternating runs of BenchmarkScrape
// at 10,000 groups, text 34.9 ms of CPU per scrape with the copy and 35.3
// ms ±13% without, no other format faster with it, and the copies held
// 3.2 MB of the heap (BenchmarkStoreHeap 101.6 MB with, 98.4 without). A
// scrape in another encoding than the push rendered for finds enc differs
// and asks the family (TextBody).
type textRef struct {
	packed []byte
	size   int32
	enc    int8
}

// familyMeta is what every group's family of one name usually shares: the
// name, HELP text and unit, interned together as one handle (8 bytes in
// each family instead of three handles' 24).
type familyMeta struct {
	name, help, unit string
}

// scratch holds the buffers newFamily encodes into, reused across the
// families of one push: a fresh 4 KB buffer per family (and another for s2's
// worst case) was 20% of all bytes allocated during a fill.
type scratch struct {
	body, packed, packedText []byte
}

// newFamily builds a stored family from a prepared (sanitized, validated)
// dto family, with its series hashes and plainness. Besides the canonical
// protobuf form, a plain family's body is rendered now in enc (the text
// encoding last scraped), straight from the dto the push decoded, so that
// scrapes only copy bytes; enc EncodingProtobuf renders none, and neither
// does a family that cannot be rendered in enc (it is stored all the same,
// so the outcome of a push never depends on enc). Only a failure to encode
// the protobuf form fails, the same for every enc. known says
// that pf.mf holds no unknown protobuf fields (Push.KnownFields). pf.mf is
// pooled memory released after the push: only encoded copies are kept. sc
// may be nil.
//
// Rendering at push time adds about 15 us to a push of the 8-family bench
// payload (BenchmarkApply groups=0, alternating runs of both test binaries:
// 62-90 us before, 91-96 us after; 10.1 -> 10.8 KB and 81 -> 90
// allocations, the kept s2 block and TextBody per family, with the push
// buffers pooled); rendering the same bodies at scrape time cost ~24 us
// per family, because the scrape had to decode the stored protobuf first.
func newFamily(pf preparedFamily, at time.Time, enc exposition.Encoding, known bool, sc *scratch) (*Family, error) {
	mf := pf.mf
	if sc == nil {
		sc = &scratch{}
	}
	f := &Family{
		meta:     unique.Make(familyMeta{name: mf.GetName(), help: mf.GetHelp(), unit: mf.GetUnit()}),
		typ:      mf.GetType(),
		lastPush: groupcodec.UnixNanos(at),
		plain:    pf.plain,
		series:   pf.series,
		labels:   pf.labels,
	}
	// Encode into the scratch buffers and keep exact-size copies:
	// appending leaves up to half of a buffer's capacity unused, which at
	// 10,000 groups was 40% of the store's memory.
	var err error
	pbFormat := exposition.NewFormat(exposition.EncodingProtobuf)
	if known {
		pbFormat = pbFormat.WithKnownFields()
	}
	sc.body, err = exposition.AppendBody(sc.body[:0], mf, pbFormat)
	if err != nil {
		return nil, fmt.Errorf("encode family %q: %w", mf.GetName(), err)
	}
	pb := encodeInto(&sc.packed, sc.body)
	if !f.plain || enc == exposition.EncodingProtobuf {
		f.packed = bytes.Clone(pb)
		return f, nil
	}
	sc.body, err = exposition.AppendBody(sc.body[:0], mf, exposition.NewFormat(enc))
	if err != nil || len(sc.body) > math.MaxInt32 {
		// No body to keep. A family that cannot be rendered in the
		// encoding last scraped (a float histogram in OpenMetrics 1.0)
		// is still stored: whether a push is accepted must not depend
		// on which format was scraped last (DESIGN §5), so it is
		// decided by the checks before, the same for every push. A
		// scrape in that encoding leaves the family out (Snapshot).
		f.packed = bytes.Clone(pb)
		return f, nil
	}
	text := encodeInto(&sc.packedText, sc.body)
	// Both blocks share one allocation: one object less per family for the
	// collector to track (900,000 at 100,000 groups). Capacities are capped
	// so that neither can grow into the other.
	both := make([]byte, len(pb)+len(text))
	copy(both, pb)
	copy(both[len(pb):], text)
	f.packed = both[:len(pb):len(pb)]
	f.pushed = textRef{packed: both[len(pb):], size: int32(len(sc.body)), enc: int8(enc)}
	return f, nil
}

// encodeInto returns the s2 block of b, encoded in the scratch buffer *buf
// (grown if need be); the result is only valid until the next use of buf.
func encodeInto(buf *[]byte, b []byte) []byte {
	if n := s2.MaxEncodedLen(len(b)); cap(*buf) < n {
		*buf = make([]byte, n)
	}
	return s2.Encode((*buf)[:cap(*buf)], b)
}

// packInto returns an exact-size copy of the s2 block of b, encoded in the
// scratch buffer *buf (grown if need be).
func packInto(buf *[]byte, b []byte) []byte {
	return bytes.Clone(encodeInto(buf, b))
}

// Name returns the metric family name.
func (f *Family) Name() string { return f.meta.Value().name }

// Help returns the HELP text as pushed.
func (f *Family) Help() string { return f.meta.Value().help }

// Type returns the metric type.
func (f *Family) Type() dto.MetricType { return f.typ }

// LastPush returns the time of the push that stored this family.
func (f *Family) LastPush() time.Time { return groupcodec.NanosTime(f.lastPush) }

// Unit returns the unit as pushed (OpenMetrics), or "".
func (f *Family) Unit() string { return f.meta.Value().unit }

// SeriesCount returns the number of metrics (series) in the family.
func (f *Family) SeriesCount() int { return len(f.series) }

// hasSeries reports whether f has type typ, exactly the given series
// hashes in that order and the given label names, so that a family with
// them has f's index entries.
func (f *Family) hasSeries(typ dto.MetricType, series []uint64, labels []string) bool {
	return f.typ == typ && slices.Equal(f.series, series) && slices.Equal(f.labels, labels)
}

// Decode returns the family as a new dto object.
func (f *Family) Decode() (*dto.MetricFamily, error) {
	metrics, err := f.metrics()
	if err != nil {
		return nil, err
	}
	mf := &dto.MetricFamily{Name: proto.String(f.Name()), Type: f.typ.Enum()}
	if h := f.Help(); h != "" {
		mf.Help = proto.String(h)
	}
	if u := f.Unit(); u != "" {
		mf.Unit = proto.String(u)
	}
	if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(metrics, mf); err != nil {
		return nil, fmt.Errorf("decode stored family %q: %w", f.Name(), err)
	}
	return mf, nil
}

// metrics returns the protobuf bytes of the family's metrics, from the
// protobuf cache or a new decompressed copy. The result must not be modified.
func (f *Family) metrics() ([]byte, error) {
	if b := f.unpacked.Load(); b != nil {
		return *b, nil
	}
	n, err := f.metricsLen()
	if err != nil {
		return nil, err
	}
	b, err := s2.Decode(make([]byte, n), f.packed)
	if err != nil {
		return nil, fmt.Errorf("decompress stored family %q: %w", f.Name(), err)
	}
	return b, nil
}

// metricsLen returns the length of the family's protobuf bytes, read from
// the s2 block's header.
func (f *Family) metricsLen() (int, error) {
	if b := f.unpacked.Load(); b != nil {
		return len(*b), nil
	}
	n, err := s2.DecodedLen(f.packed)
	if err != nil {
		return 0, fmt.Errorf("decompress stored family %q: %w", f.Name(), err)
	}
	return n, nil
}
