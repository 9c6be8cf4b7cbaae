package store

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"time"
	"unique"
	"unsafe"

	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupcodec"
	"github.com/pushgate/pushgate/render"
	"github.com/pushgate/pushgate/seriesid"
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
// Names, HELP texts, units and types are interned: every group of a batch
// job pushes the same ones, and at 10,000 groups of the bench payload their
// copies took 11 MB. A unique.Handle is also half the size of a string
// header.
//
// A family is 96 bytes and sits in the 96-byte size class. With the type
// in meta and the fields few families use behind one pointer (extra),
// instead of a type field and two pointers, it went from 144 bytes to 128,
// and BenchmarkStoreHeap at 10,000 groups from 81.2 to 79.6 MB. With its
// protobuf block and its pushed text body behind one slice of the render
// cache (render.Cache.Stored), not a slice each, it went to 112 bytes:
// BenchmarkStoreHeap 79.95 to 78.35 MB, and 89.52 to 87.92 MB after
// scrapes (3 runs each, every run the same to 0.01 MB). With that slice
// held as a pointer and a length (render.textRef), it went to 96 bytes:
// BenchmarkStoreHeap 78.35 to 76.7 MB (2 runs, 76.75 and 76.68), and
// 87.92 to 86.3 MB after scrapes. The render cache's skeleton pointer
// (render.Skeleton) took 8 bytes more; holding the series hashes as a
// pointer and a length (hashes) gave them back.
type Family struct {
	meta unique.Handle[familyMeta]
	// lastPush is the push time as a record holds it
	// (groupcodec.UnixNanos: 0 for never): a time.Time is three words and
	// holds a pointer.
	lastPush int64
	// hashes points to the family's series hashes (series), nhashes of
	// them: one per metric (name plus sorted labels), for the consistency
	// index. A pointer and a length instead of a slice, whose capacity was
	// never used, keep the family 96 bytes with its render cache's
	// skeleton pointer (render.Skeleton).
	hashes  *uint64
	nhashes uint32
	// cache holds the bodies rendered for scrapes, and whether the family
	// is plain (every name a legacy name). It is kept inline, by value:
	// see render.Cache for the figures.
	cache render.Cache
	// slot is the scrape-order slot that showed this family when it was
	// installed; set and read by install only, under the store's lock.
	slot *slot
	// extra holds what few families have, nil when they have none of it.
	// It is never modified once set: families share it (sameIdentity).
	extra *familyExtra
}

// familyMeta is what every group's family of one name usually shares: the
// name, HELP text, unit and type, interned together as one handle (8 bytes
// in each family instead of three handles' 24 and a type's 8 with padding).
type familyMeta struct {
	name, help, unit string
	typ              dto.MetricType
}

// familyExtra holds what a family keeps only in some gateways or for some
// pushes.
type familyExtra struct {
	// labels holds the distinct label names under the UTF-8 name rules,
	// for the index's label check (labelNames); nil under the legacy
	// rules.
	labels []string
	// state is the opaque state its push gave the family (Push.States,
	// see headstate.go), nil for none.
	state []byte
}

// newExtra returns the extra of a family with label names labels and state
// state: nil when both are.
func newExtra(labels []string, state []byte) *familyExtra {
	if labels == nil && state == nil {
		return nil
	}
	return &familyExtra{labels: labels, state: state}
}

// scratch holds the buffers newFamily encodes into, reused across the
// families of one push: a fresh 4 KB buffer per family (and another for s2's
// worst case) was 20% of all bytes allocated during a fill. body and packed
// take the protobuf bytes and their s2 block (and a restore's decompressed
// record); text takes the rendered text body and its block.
type scratch struct {
	body, packed []byte
	text         render.Scratch
	// id derives the time families' identity (seriesid.Family keeps its
	// buffer across uses).
	id seriesid.Family
	// check holds admission's buffers for a Disposable push.
	check admission.Scratch
	// vals, old and oldText take a push's values and a family's last
	// protobuf bytes and text body, newText its new text body, for a push
	// applied from its group's template (PushText);
	// fams, prepared and ids hold what it installs and what the index
	// reads of it.
	vals []float64
	old  []byte
	// replaced takes the protobuf body of the family a family rebuilt
	// from a record replaces, for sameIdentity; records and bodies the
	// bodies of a record's families (recordBodies), digest what
	// labelsDigest hashes.
	replaced []byte
	records  []byte
	bodies   [][]byte
	digest   []byte
	oldText  []byte
	newText  []byte
	// skeleton and area take a family's skeleton and value area
	// (exposition.ExtractValues) for a push applied from its template.
	skeleton []byte
	area     []byte
	fams     []*Family
	prepared []admission.Family
	ids      []familyID
}

// familyID is what the index's check reads of a family applied from a
// template (admission.Family.MF): its name and type.
type familyID struct {
	mf   dto.MetricFamily
	name string
	typ  dto.MetricType
}

// reset forgets what the last push applied from a template left in sc, so
// that a pooled scratch keeps no family alive.
func (sc *scratch) reset() {
	clear(sc.fams)
	clear(sc.prepared)
	clear(sc.ids)
	clear(sc.bodies)
	sc.fams, sc.prepared, sc.ids, sc.bodies = sc.fams[:0], sc.prepared[:0], sc.ids[:0], sc.bodies[:0]
}

// newFamily builds a stored family from a prepared (sanitized, validated)
// dto family, with its series hashes and plainness. Besides the canonical
// protobuf form, a plain family's body is rendered now in enc (the text
// encoding last scraped) into its cache (render.Cache.Fill, which says
// why); only a failure to encode the protobuf form fails, the same for
// every enc. known says that pf.MF holds no unknown protobuf fields
// (Push.KnownFields). pf.MF is pooled memory released after the push: only
// encoded copies are kept. sc may be nil. The family is kept whole: only
// the pushes applied from its group's template keep skeletons (see
// repushFamily for why).
func newFamily(pf admission.Family, at int64, enc exposition.Encoding, known bool, sc *scratch) (*Family, error) {
	mf := pf.MF
	if sc == nil {
		sc = &scratch{}
	}
	f := &Family{
		meta:     unique.Make(familyMeta{name: mf.GetName(), help: mf.GetHelp(), unit: mf.GetUnit(), typ: mf.GetType()}),
		lastPush: at,
		extra:    newExtra(pf.Labels, nil),
	}
	f.setSeries(pf.Series)
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
	f.cache.Fill(mf, pf.Plain, enc, render.EncodeInto(&sc.packed, sc.body), &sc.text)
	return f, nil
}

// packInto returns an exact-size copy of the s2 block of b, encoded in the
// scratch buffer *buf (grown if need be).
func packInto(buf *[]byte, b []byte) []byte {
	return bytes.Clone(render.EncodeInto(buf, b))
}

// Name returns the metric family name.
func (f *Family) Name() string { return f.meta.Value().name }

// Help returns the HELP text as pushed.
func (f *Family) Help() string { return f.meta.Value().help }

// Type returns the metric type.
func (f *Family) Type() dto.MetricType { return f.meta.Value().typ }

// LastPush returns the time of the push that stored this family.
func (f *Family) LastPush() time.Time { return groupcodec.NanosTime(f.lastPush) }

// Unit returns the unit as pushed (OpenMetrics), or "".
func (f *Family) Unit() string { return f.meta.Value().unit }

// SeriesCount returns the number of metrics (series) in the family.
func (f *Family) SeriesCount() int { return int(f.nhashes) }

// series returns the family's series hashes, one per metric. They must not
// be modified: the families that follow one another share them.
func (f *Family) series() []uint64 { return unsafe.Slice(f.hashes, f.nhashes) }

// setSeries makes h the family's series hashes, which it keeps.
func (f *Family) setSeries(h []uint64) {
	if uint64(len(h)) > math.MaxUint32 {
		panic(fmt.Sprintf("store: a family of %d series", len(h)))
	}
	f.hashes, f.nhashes = unsafe.SliceData(h), uint32(len(h))
	if len(h) == 0 {
		f.hashes = nil
	}
}

// hasSeries reports whether f has type typ, exactly the given series
// hashes in that order and the given label names, so that a family with
// them has f's index entries.
func (f *Family) hasSeries(typ dto.MetricType, series []uint64, labels []string) bool {
	return f.Type() == typ && sameHashes(f.series(), series) && slices.Equal(f.labelNames(), labels)
}

// sameHashes reports whether a and b hold the same hashes: at once when
// they are the same slice, as the families that replace one another from a
// template share theirs, without reading them (measured only together with
// the skeleton sharing, see repushFamily).
func sameHashes(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0] || slices.Equal(a, b)
}

// labelNames returns the family's distinct label names under the UTF-8
// name rules, nil under the legacy rules.
func (f *Family) labelNames() []string {
	if f.extra == nil {
		return nil
	}
	return f.extra.labels
}

// Decode returns the family as a new dto object.
func (f *Family) Decode() (*dto.MetricFamily, error) {
	metrics, err := f.cache.Metrics(f)
	if err != nil {
		return nil, err
	}
	return exposition.DecodeStored(exposition.StoredFamily{Name: f.Name(), Help: f.Help(), Unit: f.Unit(), Type: f.Type(), Metrics: metrics})
}

// Cache returns the family's render cache, what scrapes read and fill.
func (f *Family) Cache() *render.Cache { return &f.cache }
