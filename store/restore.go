package store

import (
	"bytes"
	"fmt"
	"unique"

	"github.com/klauspost/compress/s2"
	dto "github.com/prometheus/client_model/go"

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
	g, prepared, err := s.storedGroup(gk, &rec)
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
func (s *Store) JournalOps() []journal.Op {
	groups := s.Groups()
	ops := make([]journal.Op, 0, len(groups))
	for _, g := range groups {
		ops = append(ops, journal.Op{Kind: journal.OpSet, Key: g.key.ID(), Value: encodeGroup(g)})
	}
	return ops
}

// installChecked installs g, which replaces the group of its key, unless
// the consistency index refuses it: the rule of a foreign file (the
// reference's, imported), not of a log of this store's. prepared are g's
// families as the index checks them.
func (s *Store) installChecked(g *Group, prepared []preparedFamily) error {
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
func (s *Store) storedGroup(key groupkey.Key, rec *groupcodec.Group) (*Group, []preparedFamily, error) {
	g := &Group{key: key, pushTime: rec.PushTime, failTime: rec.FailureTime, failReason: rec.FailureReason, families: make(map[string]*Family, len(rec.Families)+2)}
	prepared := make([]preparedFamily, 0, len(rec.Families)+2)
	var id seriesid.Family
	var sc scratch
	for i := range rec.Families {
		rf := &rec.Families[i]
		f, err := s.storedFamily(rf, &id, &sc)
		if err != nil {
			return nil, nil, err
		}
		g.families[f.Name()] = f
		// The index reads the name and type; the fields point into rec.
		mf := &dto.MetricFamily{Name: &rf.Name, Type: &rf.Type}
		prepared = append(prepared, preparedFamily{mf: mf, series: f.series, labels: f.labels})
	}
	return g, s.addTimeFamilies(g, prepared, s.render.encoding(), &sc), nil
}

// familiesOf returns g's families, nil for an absent group.
func familiesOf(g *Group) map[string]*Family {
	if g == nil {
		return nil
	}
	return g.families
}

// storedFamily rebuilds a family from its record. A record of version 3
// holds the family's s2 block: it is decompressed into sc.body, to read
// the series, and a copy of it becomes the family's (the record's memory
// may be reused after: Apply keeps no reference to it). An older record
// holds the protobuf bytes, which are compressed.
func (s *Store) storedFamily(rf *groupcodec.Family, id *seriesid.Family, sc *scratch) (*Family, error) {
	name := rf.Name
	metrics := rf.Metrics
	if rf.Packed != nil {
		n, err := s2.DecodedLen(rf.Packed)
		if err != nil {
			return nil, fmt.Errorf("decompress family %q: %w", name, err)
		}
		if cap(sc.body) < n {
			sc.body = make([]byte, n)
		}
		if metrics, err = s2.Decode(sc.body[:n], rf.Packed); err != nil {
			return nil, fmt.Errorf("decompress family %q: %w", name, err)
		}
	}
	f := &Family{
		meta:     unique.Make(familyMeta{name: name, help: rf.Help, unit: rf.Unit}),
		typ:      rf.Type,
		lastPush: groupcodec.UnixNanos(rf.LastPush),
	}
	id.Start(s.seed, name, s.opts.UTF8Names)
	err := exposition.ProtobufBodyLabels(metrics, func(labels []exposition.LabelBytes) {
		f.series = append(f.series, id.SeriesBytes(labels))
	})
	if err != nil {
		return nil, fmt.Errorf("decode family %q: %w", name, err)
	}
	f.labels = id.LabelNames()
	f.cache.SetPlain(id.PlainBody(f.typ, metrics))
	// Decode copied the state out of the record already.
	if len(rf.State) > 0 {
		// Its own variable: a pointer into rec would keep the record, and
		// the log's memory its blocks slice, alive.
		st := rf.State
		f.state = &st
	}
	if rf.Packed != nil {
		f.packed = bytes.Clone(rf.Packed)
	} else {
		f.packed = packInto(&sc.packed, metrics)
	}
	return f, nil
}
