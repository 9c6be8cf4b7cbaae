package store

import (
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupcodec"
	"github.com/pushgate/pushgate/groupkey"
)

// HELP texts of the synthetic families, as the reference Pushgateway words them.
const (
	pushTimeHelp        = "Last Unix time when changing this group in the Pushgateway succeeded."
	pushFailureTimeHelp = "Last Unix time when changing this group in the Pushgateway failed."
)

// Group is the stored state of one grouping key. A Group is immutable: every
// change installs a new Group that shares the unchanged families.
type Group struct {
	key      groupkey.Key
	families familySet
	pushTime time.Time
	failTime time.Time
	// failReason is the one-line reason of the last rejected push, kept
	// with failTime.
	failReason string
	// textScrapes is render.State.TextScrapes as the push that made the
	// group began (0 for a restored or applied group): see
	// Store.renderAtPush.
	textScrapes uint64
	// tmpl is the template of the text body the group's families named
	// in it came from (PushText), nil when they did not all come from
	// one.
	tmpl *exposition.TextTemplate
	// labels is the digest of the label sets of the families of the
	// record the group was rebuilt from (labelsDigest), 0 for none.
	labels uint64
}

// Key returns the group's grouping key.
func (g *Group) Key() groupkey.Key { return g.key }

// PushTime returns the time of the last successful push, or the zero time.
func (g *Group) PushTime() time.Time { return g.pushTime }

// FailureTime returns the time of the last failed push, or the zero time.
func (g *Group) FailureTime() time.Time { return g.failTime }

// FailureReason returns the one-line reason the last failed push was
// rejected with, or "" when no push failed (or the failure predates
// pushgate keeping reasons).
func (g *Group) FailureReason() string { return g.failReason }

// FamilyTime returns the time the request that last wrote family f of g
// was received, the time the reference keeps beside each family and shows
// as its time_stamp in the API and the UI: for a pushed family, the push
// that brought it; for push_time_seconds, the last successful push (the
// failed one, if a failure created the group); for
// push_failure_time_seconds, the last failed push, or else a successful one
// (the reference adds it at the group's first push; pushgate does not keep
// that time and gives the last one). It is never the zero time for a group
// that was written once.
func (g *Group) FamilyTime(f *Family) time.Time {
	first, second := g.pushTime, g.failTime
	switch f.Name() {
	case PushTimeName:
	case PushFailureTimeName:
		first, second = second, first
	default:
		return f.LastPush()
	}
	if first.IsZero() {
		return second
	}
	return first
}

// LastPushSuccessful reports whether the last push succeeded, by the
// reference's rule: failed means the failure time is after the success time.
func (g *Group) LastPushSuccessful() bool { return !g.failTime.After(g.pushTime) }

// Families returns the group's families, including push_time_seconds and
// push_failure_time_seconds, sorted by name. The slice is the group's own:
// it must not be modified.
func (g *Group) Families() []*Family { return g.families }

// SeriesCount returns the number of series in the group, synthetic ones included.
func (g *Group) SeriesCount() int {
	n := 0
	for _, f := range g.families {
		n += len(f.series())
	}
	return n
}

// clone returns a copy of g with its own family set, sharing the families.
func (g *Group) clone() *Group {
	return &Group{key: g.key, pushTime: g.pushTime, failTime: g.failTime, failReason: g.failReason, families: g.families.clone(0), textScrapes: g.textScrapes, tmpl: g.tmpl}
}

// unixSeconds converts at, a time as a record holds it
// (groupcodec.UnixNanos, where the zero time, "never", is 0), to the float
// the timestamp families carry: seconds.
func unixSeconds(at int64) float64 {
	return float64(at) / 1e9
}

// timeFamily builds push_time_seconds or push_failure_time_seconds for key,
// rendering its text in enc with the buffers sc (nil for fresh ones).
func (s *Store) timeFamily(name string, key groupkey.Key, at int64, enc exposition.Encoding, sc *scratch) (*Family, admission.Family) {
	help := pushTimeHelp
	if name == PushFailureTimeName {
		help = pushFailureTimeHelp
	}
	labels := key.LabelPairs(true)
	mf := &dto.MetricFamily{
		Name:   proto.String(name),
		Help:   proto.String(help),
		Type:   dto.MetricType_GAUGE.Enum(),
		Metric: []*dto.Metric{{Label: labels, Gauge: &dto.Gauge{Value: proto.Float64(unixSeconds(at))}}},
	}
	if sc == nil {
		sc = &scratch{}
	}
	id := &sc.id
	id.Start(s.seed, name, s.opts.UTF8Names)
	pf := admission.Family{MF: mf, Series: []uint64{id.Series(labels)}}
	pf.Plain, pf.Labels = id.Plain(mf), id.LabelNames()
	f, err := newFamily(pf, at, enc, true, sc)
	if err != nil {
		// A gauge with valid labels always encodes; a failure here is a bug.
		panic("store: encode " + name + ": " + err.Error())
	}
	return f, pf
}

// addTimeFamilies adds g's push_time_seconds and push_failure_time_seconds,
// from its times, and returns prepared with the prepared forms of those
// built anew appended for the index check. from is the group of g's key
// that g replaces, nil for none (nextTimeFamily). sc may be nil when from
// is.
func (s *Store) addTimeFamilies(g *Group, from *Group, prepared []admission.Family, enc exposition.Encoding, sc *scratch) []admission.Family {
	for _, name := range [...]string{PushTimeName, PushFailureTimeName} {
		at := g.pushTime
		if name == PushFailureTimeName {
			at = g.failTime
		}
		f, pf, built := s.nextTimeFamily(from, name, g.key, groupcodec.UnixNanos(at), enc, false, sc)
		g.families.put(f)
		if built {
			prepared = append(prepared, pf)
		}
	}
	return prepared
}

// nextTimeFamily returns the time family name (PushTimeName or
// PushFailureTimeName) of group key at time at: from's own when it has
// that time, written from it (retime) when it has another, else built
// anew (timeFamily), with its prepared form for the index check (built).
// from is the group of key the family's group replaces, nil for none; a
// family taken or written from it keeps its series, which the index holds
// for the group already.
//
// A follower applies every push through here (storedGroup): building both
// time families anew was 11% of its CPU per applied push in a 3-replica
// cluster taking 32 clients' pushes of the bench payload. skeletons says
// whether a family written from from's is kept as its skeleton and value
// area (PushText).
func (s *Store) nextTimeFamily(from *Group, name string, key groupkey.Key, at int64, enc exposition.Encoding, skeletons bool, sc *scratch) (f *Family, pf admission.Family, built bool) {
	if from != nil {
		if f := from.families.get(name); f != nil && f.lastPush == at {
			return f, admission.Family{}, false
		}
		if f := retime(from, name, at, enc, skeletons, sc); f != nil {
			return f, admission.Family{}, false
		}
	}
	f, pf = s.timeFamily(name, key, at, enc, sc)
	return f, pf, true
}

// journalValue encodes g for the journal, or returns nil when there is no
// journal: encoding copies every family's block, work a memory-only store
// need not do on every push. s.mu must be held.
func (s *Store) journalValue(g *Group) ([]byte, error) {
	if s.journal == nil {
		return nil, nil
	}
	return encodeGroup(g)
}
