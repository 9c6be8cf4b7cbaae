package store

import (
	"fmt"
	"hash/maphash"
	"slices"
	"unique"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/encoding/protowire"
)

// Restore loads one journal record (a key and a group encoded by the store)
// into the store. It is the callback for journal.Open and runs before the
// store serves requests. A record that conflicts with groups already loaded
// is skipped with a warning rather than making the store inconsistent.
func (s *Store) Restore(key string, value []byte) error {
	sg, err := decodeGroup(value)
	if err != nil {
		return fmt.Errorf("restore group %q: %w", key, err)
	}
	if err := s.restoreStored(sg); err != nil {
		s.logger.Warn("stored group skipped", "group", sg.key.String(), "err", err)
	}
	return nil
}

// restoreStored installs a group the store itself encoded, unless the
// consistency index refuses it.
func (s *Store) restoreStored(sg storedGroup) error {
	g, prepared, err := s.storedGroup(sg)
	if err != nil {
		return err
	}
	return s.installStored(g, prepared)
}

// installStored installs a group rebuilt by storedGroup, unless the
// consistency index refuses it.
func (s *Store) installStored(g *Group, prepared []preparedFamily) error {
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

// storedGroup rebuilds a group the store itself encoded. Its families were
// checked field by field and rendered when they were pushed, so they are
// rebuilt straight from their protobuf bytes: the series are hashed from
// the labels read in place, and text is rendered by the first scrape that
// needs it. Building families through prepare and newFamily instead took
// 1.2 s for 10,000 groups of the bench payload (BenchmarkRestore), most of
// it decoding into dto objects and rendering.
func (s *Store) storedGroup(sg storedGroup) (*Group, []preparedFamily, error) {
	g := &Group{key: sg.key, pushTime: sg.pushTime, failTime: sg.failTime, failReason: sg.failReason, families: make(map[string]*Family, len(sg.families)+2)}
	prepared := make([]preparedFamily, 0, len(sg.families)+2)
	var h maphash.Hash
	h.SetSeed(s.seed)
	var sc scratch
	for _, sf := range sg.families {
		f, err := s.storedFamily(sf, &h, &sc)
		if err != nil {
			return nil, nil, err
		}
		g.families[f.Name()] = f
		prepared = append(prepared, preparedFamily{mf: sf.mf, series: f.series, labels: f.labels})
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

// storedFamily rebuilds a family from its stored protobuf bytes.
func (s *Store) storedFamily(sf storedFamily, h *maphash.Hash, sc *scratch) (*Family, error) {
	name := sf.mf.GetName()
	f := &Family{
		meta:     unique.Make(familyMeta{name: name, help: sf.mf.GetHelp(), unit: sf.mf.GetUnit()}),
		typ:      sf.mf.GetType(),
		lastPush: timeNanos(sf.lastPush),
		plain:    model.LegacyValidation.IsValidMetricName(name),
	}
	err := storedSeries(sf.metrics, func(labels []storedLabel) {
		h.Reset()
		h.WriteString(name)
		for _, l := range labels {
			hashLabel(h, l.name, l.value)
			f.plain = f.plain && model.LegacyValidation.IsValidLabelName(string(l.name))
			if s.opts.UTF8Names && !slices.Contains(f.labels, string(l.name)) {
				f.labels = append(f.labels, string(l.name))
			}
		}
		f.series = append(f.series, h.Sum64())
	})
	if err != nil {
		return nil, fmt.Errorf("decode family %q: %w", name, err)
	}
	slices.Sort(f.labels)
	if f.plain && (f.typ == dto.MetricType_COUNTER || f.typ == dto.MetricType_HISTOGRAM || f.typ == dto.MetricType_GAUGE_HISTOGRAM) {
		// Exemplar label names count too (see newFamily).
		f.plain = storedExemplarNamesLegacy(sf.metrics)
	}
	f.packed = packInto(&sc.packed, sf.metrics)
	return f, nil
}

// storedLabel is a label pair read in place from protobuf bytes.
type storedLabel struct{ name, value []byte }

// storedSeries calls fn with the labels of each metric in b (repeated
// field 4 of MetricFamily), reading them in place. The slice passed to fn
// is reused.
func storedSeries(b []byte, fn func([]storedLabel)) error {
	var labels []storedLabel
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if num != 4 || typ != protowire.BytesType {
			return fmt.Errorf("unexpected field %d of type %d in stored metrics", num, typ)
		}
		m, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		labels = labels[:0]
		for len(m) > 0 {
			num, typ, n := protowire.ConsumeTag(m)
			if n < 0 {
				return protowire.ParseError(n)
			}
			m = m[n:]
			if num != 1 || typ != protowire.BytesType {
				n = protowire.ConsumeFieldValue(num, typ, m)
				if n < 0 {
					return protowire.ParseError(n)
				}
				m = m[n:]
				continue
			}
			lp, n := protowire.ConsumeBytes(m)
			if n < 0 {
				return protowire.ParseError(n)
			}
			m = m[n:]
			var l storedLabel
			for len(lp) > 0 {
				num, typ, n := protowire.ConsumeTag(lp)
				if n < 0 {
					return protowire.ParseError(n)
				}
				lp = lp[n:]
				if typ != protowire.BytesType {
					n = protowire.ConsumeFieldValue(num, typ, lp)
					if n < 0 {
						return protowire.ParseError(n)
					}
					lp = lp[n:]
					continue
				}
				v, n := protowire.ConsumeBytes(lp)
				if n < 0 {
					return protowire.ParseError(n)
				}
				lp = lp[n:]
				switch num {
				case 1:
					l.name = v
				case 2:
					l.value = v
				}
			}
			labels = append(labels, l)
		}
		fn(labels)
	}
	return nil
}
