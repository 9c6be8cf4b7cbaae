package otlp

import (
	"fmt"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/pushgate/pushgate/seriesid"
)

// groupBuilder collects one group's families while a request is
// translated.
type groupBuilder struct {
	key    []label
	fams   []*familyBuilder
	byName map[string]*familyBuilder
	// series finds a family's series by its labels' hash, so that a later
	// point of the same series replaces the earlier one.
	series   map[seriesRef]int
	rejected int
	reason   string
}

// seriesRef names a series of a group: its family's index and its labels'
// hash.
type seriesRef struct {
	fam  int
	hash uint64
}

// familyBuilder is one family under construction. It holds the family's
// message and header fields, so that a family costs one allocation.
type familyBuilder struct {
	id     int
	mf     *dto.MetricFamily
	msg    dto.MetricFamily
	header familyHeader
	// delta marks a family of delta points (Group.Deltas), whose points
	// each stay, with their windows.
	delta   bool
	windows []Window
	// newest is the newest timestamp of the family's points.
	newest pcommon.Timestamp
	// used is set by the first point stored or removed: a family all of
	// whose points were refused is left out, since an empty family
	// removes the stored one.
	used bool
	// holes counts metrics removed (set to nil) by a later
	// NoRecordedValue point of their series.
	holes int
}

func newGroupBuilder(key []label) *groupBuilder {
	return &groupBuilder{key: key}
}

// family returns the builder of the family h names, creating it with room
// for n more points. A name used for delta points when these are
// cumulative (or the reverse) is refused: the store would not know which
// of two values of a series to keep. (That a name has one type in the
// request, translation.claimFamily has checked.)
func (g *groupBuilder) family(a *arena, h familyHeader, delta bool, n int) (*familyBuilder, error) {
	if f, ok := g.byName[h.name]; ok {
		if f.delta != delta {
			return nil, fmt.Errorf("its family %q mixes delta and cumulative points in this request", h.name)
		}
		f.mf.Metric = slices.Grow(f.mf.Metric, n)
		return f, nil
	}
	f := a.families.new()
	f.id, f.delta, f.header = len(g.fams), delta, h
	f.mf = &f.msg
	f.mf.Name, f.mf.Type = &f.header.name, &f.header.typ
	if h.help != "" {
		f.mf.Help = &f.header.help
	}
	if h.unit != "" {
		f.mf.Unit = &f.header.unit
	}
	f.mf.Metric = a.metricPtrs.run(n)[:0]
	if delta {
		f.windows = make([]Window, 0, n)
	}
	if g.byName == nil {
		g.byName = make(map[string]*familyBuilder, 16)
	}
	g.byName[h.name] = f
	g.fams = append(g.fams, f)
	return f, nil
}

// refuse counts n refused points and keeps the first reason.
func (g *groupBuilder) refuse(n int, reason string) {
	g.rejected += n
	if g.reason == "" {
		g.reason = reason
	}
}

// finish returns the group.
func (g *groupBuilder) finish() Group {
	out := Group{Rejected: g.rejected, Reason: g.reason, Families: make([]*dto.MetricFamily, 0, len(g.fams)), Times: make([]time.Time, 0, len(g.fams))}
	// target_info has no point of its own: it is as new as the group's
	// newest point.
	var newest pcommon.Timestamp
	for _, f := range g.fams {
		newest = max(newest, f.newest)
	}
	if g.key != nil {
		out.Labels = make(map[string]string, len(g.key))
		for _, l := range g.key {
			out.Labels[l.name] = l.value
		}
	}
	for _, f := range g.fams {
		if !f.used {
			continue
		}
		if f.holes > 0 {
			kept := f.mf.Metric[:0]
			for _, m := range f.mf.Metric {
				if m != nil {
					kept = append(kept, m)
				}
			}
			clear(f.mf.Metric[len(kept):])
			f.mf.Metric = kept
		}
		if f.delta {
			out.Deltas = append(out.Deltas, DeltaFamily{Family: f.mf, Windows: f.windows})
		} else {
			out.Families = append(out.Families, f.mf)
			t := f.newest
			if f.header.name == targetInfoName {
				t = newest
			}
			out.Times = append(out.Times, timeOf(t))
		}
	}
	return out
}

// add stores m, a point of family f with labels ls, in g. A cumulative
// point replaces an earlier point of the same series (Prometheus keeps the
// last sample of a series); delta points are all kept, with w, their
// window.
func (tr *translation) add(g *groupBuilder, f *familyBuilder, ls labelList, m *dto.Metric, w *Window) {
	f.used = true
	if f.delta {
		m.Label = tr.arena.labelPairs(ls)
		f.mf.Metric = append(f.mf.Metric, m)
		f.windows = append(f.windows, *w)
		return
	}
	ref := seriesRef{f.id, tr.labelsHash(ls)}
	if i, ok := g.series[ref]; ok && f.mf.Metric[i] != nil && sameLabels(f.mf.Metric[i].Label, ls) {
		m.Label = f.mf.Metric[i].Label
		f.mf.Metric[i] = m
		return
	} else if ok && f.mf.Metric[i] == nil {
		f.holes--
		m.Label = tr.arena.labelPairs(ls)
		f.mf.Metric[i] = m
		return
	}
	m.Label = tr.arena.labelPairs(ls)
	if g.series == nil {
		g.series = make(map[seriesRef]int, 64)
	}
	g.series[ref] = len(f.mf.Metric)
	f.mf.Metric = append(f.mf.Metric, m)
}

// remove handles a NoRecordedValue point of family f with labels ls: the
// point is not stored, and an earlier point of the same series in the
// request goes (Prometheus writes a staleness marker after it). The family
// is present even if that leaves it empty, so that the push removes it.
func (tr *translation) remove(g *groupBuilder, f *familyBuilder, ls labelList) {
	if f.delta {
		return
	}
	f.used = true
	ref := seriesRef{f.id, tr.labelsHash(ls)}
	if i, ok := g.series[ref]; ok && f.mf.Metric[i] != nil && sameLabels(f.mf.Metric[i].Label, ls) {
		f.mf.Metric[i] = nil
		f.holes++
	}
}

// labelsHash hashes sorted labels, as the store's series identity does.
func (tr *translation) labelsHash(ls labelList) uint64 {
	tr.hash.Reset()
	for _, l := range ls {
		seriesid.HashLabel(&tr.hash, l.name, l.value)
	}
	return tr.hash.Sum64()
}

// sameLabels reports whether stored label pairs are ls.
func sameLabels(pairs []*dto.LabelPair, ls labelList) bool {
	if len(pairs) != len(ls) {
		return false
	}
	for i, p := range pairs {
		if p.GetName() != ls[i].name || p.GetValue() != ls[i].value {
			return false
		}
	}
	return true
}
