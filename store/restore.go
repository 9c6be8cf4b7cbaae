package store

import (
	"bytes"
	"fmt"
	"unique"

	"github.com/klauspost/compress/s2"
	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupcodec"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/seriesid"
)

// Restore loads one journal record (a key and a group encoded by the store)
// into the store. It is the callback for filejournal.Open and runs before the
// store serves requests. A record that conflicts with groups already loaded
// is applied all the same and counted, by the rule every log reader follows
// (see applyLocked); one whose families cannot be rebuilt is skipped with a
// warning.
func (s *Store) Restore(key string, value []byte) error {
	rec, err := groupcodec.Decode(value)
	if err != nil {
		return fmt.Errorf("restore group %q: %w", key, err)
	}
	gk := recordKey(&rec)
	g, prepared, err := s.storedGroup(gk, &rec, s.committedGroup(gk.ID()))
	if err != nil {
		s.logger.Warn("stored group skipped", "group", gk.String(), "err", err)
		return nil
	}
	s.mu.Lock()
	s.applyLocked(0, gk.ID(), g, prepared)
	s.mu.Unlock()
	return nil
}

// JournalOps returns one Set op per stored group, each value a record
// Restore loads back: the whole state, for writing a fresh journal (after
// an import).
func (s *Store) JournalOps() ([]journal.Op, error) {
	groups := s.Groups()
	ops := make([]journal.Op, 0, len(groups))
	for _, g := range groups {
		value, err := encodeGroup(g)
		if err != nil {
			return nil, err
		}
		ops = append(ops, journal.Op{Kind: journal.OpSet, Key: g.key.ID(), Value: value})
	}
	return ops, nil
}

// installChecked installs g, which replaces the group of its key, unless
// the consistency index refuses it: the rule of a foreign file (the
// reference's, imported), not of a log of this store's. prepared are g's
// families as the index checks them.
func (s *Store) installChecked(g *Group, prepared []admission.Family) error {
	gid := g.key.ID()
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.groups[gid]
	if err := s.index.check(gid, familiesOf(old), g.families, prepared, s.ownerName); err != nil {
		return err
	}
	s.install(gid, old, g)
	return nil
}

// storedGroup rebuilds the group of key the store itself encoded as rec
// (key is recordKey(rec)). Its families were checked field by field and
// rendered when they were pushed, so they are rebuilt straight from their
// protobuf bytes: their identity (seriesid.Family, the push's rule) is
// derived from the labels read in place, and text is rendered by the first
// scrape that needs it. Building families through prepare and newFamily
// instead took 1.2 s for 10,000 groups of the bench payload
// (BenchmarkRestore), most of it decoding into dto objects and rendering.
//
// old is the group the store holds under key, nil for none: what of its
// families the record did not change is taken from them rather than
// derived again (see sameIdentity). Taking its time families too when
// their times are the same (a re-push keeps its failure time) made no
// difference that 10 alternating runs of BenchmarkApplyRepush could show
// (49.5 against 48.9 us of CPU per apply, p=0.63), and was left out.
func (s *Store) storedGroup(key groupkey.Key, rec *groupcodec.Group, old *Group) (*Group, []admission.Family, error) {
	if old != nil && old.key.ID() != key.ID() {
		old = nil
	}
	g := &Group{key: key, pushTime: rec.PushTime, failTime: rec.FailureTime, failReason: rec.FailureReason, families: make(familySet, 0, len(rec.Families)+2)}
	prepared := make([]admission.Family, 0, len(rec.Families)+2)
	sc := s.render.scratch()
	defer s.render.putScratch(sc)
	bodies, err := recordBodies(rec, sc)
	if err != nil {
		return nil, nil, err
	}
	g.labels = labelsDigest(s.seed, rec, bodies, &sc.digest)
	// Every family's label sets are those of the family of its name
	// and type in old: its identity is taken without comparing them.
	known := old != nil && g.labels != 0 && g.labels == old.labels
	// A record lists its families sorted by name, as a group holds them
	// (encodeGroup).
	var buf [16]*Family
	held := counterpartsOf(len(rec.Families), func(i int) string { return rec.Families[i].Name }, familiesOf(old), buf[:])
	for i := range rec.Families {
		rf := &rec.Families[i]
		f, err := s.storedFamily(rf, bodies[i], held[i], known, sc)
		if err != nil {
			return nil, nil, err
		}
		g.families.put(f)
		// The index reads the name and type; the fields point into rec.
		mf := &dto.MetricFamily{Name: &rf.Name, Type: &rf.Type}
		prepared = append(prepared, admission.Family{MF: mf, Series: f.series(), Labels: f.labelNames()})
	}
	return g, s.addTimeFamilies(g, old, prepared, s.render.encoding(), sc), nil
}

// committedGroup returns the committed group gid, nil for none.
func (s *Store) committedGroup(gid string) *Group {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.groups[gid]
}

// familiesOf returns g's families, nil for an absent group.
func familiesOf(g *Group) familySet {
	if g == nil {
		return nil
	}
	return g.families
}

// storedFamily rebuilds a family from its record, whose protobuf body is
// metrics (recordBodies): a copy of the record's s2 block becomes the
// family's (the record's memory may be reused after: Apply keeps no
// reference to it); an older record's body is compressed. of is the family
// of the same name the store holds in the group, nil for none; known says
// that its label sets are metrics' (labelsDigest).
func (s *Store) storedFamily(rf *groupcodec.Family, metrics []byte, of *Family, known bool, sc *scratch) (*Family, error) {
	name := rf.Name
	meta := familyMeta{name: name, help: rf.Help, unit: rf.Unit, typ: rf.Type}
	f := &Family{lastPush: groupcodec.UnixNanos(rf.LastPush)}
	if of != nil && of.meta.Value() == meta {
		f.meta = of.meta
	} else {
		f.meta = unique.Make(meta)
	}
	if !sameIdentity(f, metrics, of, known, sc) {
		sc.id.Start(s.seed, name, s.opts.UTF8Names)
		var series []uint64
		err := exposition.ProtobufBodyLabels(metrics, func(labels []exposition.LabelBytes) {
			series = append(series, sc.id.SeriesBytes(labels))
		})
		f.setSeries(series)
		if err != nil {
			return nil, fmt.Errorf("decode family %q: %w", name, err)
		}
		f.extra = newExtra(sc.id.LabelNames(), nil)
		f.cache.SetPlain(sc.id.PlainBody(f.Type(), metrics))
	}
	// Decode copied the state out of the record already, so keeping it
	// keeps neither the record nor the log's memory alive.
	if len(rf.State) > 0 {
		f.extra = newExtra(f.labelNames(), rf.State)
	}
	if rf.Packed != nil {
		f.cache.SetProtobuf(bytes.Clone(rf.Packed))
	} else {
		f.cache.SetProtobuf(packInto(&sc.packed, metrics))
	}
	return f, nil
}

// sameIdentity gives f, a family rebuilt from the protobuf body metrics,
// the identity of of, the family of its name it replaces (nil for none),
// and reports whether it did: when of has f's type and its body holds the
// same label sets, byte for byte, in the same order
// (exposition.SameProtobufLabels, or known, when labelsDigest showed it
// for the whole group), f's series hash as of's did and its label names
// are of's. of's were derived in this process, under the store's seed (a
// record's own cannot be trusted: another process hashes under another
// seed). A batch job re-pushing new values for the same series, the
// common case, costs a comparison of label bytes instead of reading and
// hashing every series again.
//
// Plainness follows from of's, except for exemplar label names, which
// change with the values and are read again. When of is not plain and its
// type carries exemplars, whether its labels or its exemplars made it so
// is not known, and f's identity is derived instead.
func sameIdentity(f *Family, metrics []byte, of *Family, known bool, sc *scratch) bool {
	if of == nil || of.Type() != f.Type() {
		return false
	}
	plain := of.cache.Plain()
	if !plain && seriesid.CarriesExemplars(f.Type()) {
		return false
	}
	if !known {
		var err error
		sc.replaced, err = of.cache.AppendMetrics(sc.replaced[:0])
		if err != nil || !exposition.SameProtobufLabels(sc.replaced, metrics) {
			return false
		}
	}
	f.hashes, f.nhashes = of.hashes, of.nhashes
	if of.extra != nil && of.extra.state == nil {
		f.extra = of.extra // never modified: shared
	} else {
		f.extra = newExtra(of.labelNames(), nil)
	}
	f.cache.SetPlain(plain && seriesid.ExemplarNamesLegacy(f.Type(), metrics))
	return true
}

// decodeBlock decompresses the s2 block into *buf, growing it as needed.
func decodeBlock(buf *[]byte, block []byte) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	return s2.Decode((*buf)[:n], block)
}
