package oracle

import (
	"cmp"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// modelGroup is what the model knows of one group: its families (grouping
// labels already applied, as the gateway stores them) and what it knows of
// its two timestamps.
type modelGroup struct {
	key  map[string]string
	fams map[string]*dto.MetricFamily
	// pushTime and failTime are the values last observed, when known.
	pushTime, failTime   float64
	pushKnown, failKnown bool
	// pushChanged is set by an accepted push since the last check, and
	// failMayChange by a rejected push with this group's key identity.
	pushChanged, failMayChange bool
	// failureOnly marks a group a rejected push created: its
	// push_time_seconds is 0.
	failureOnly bool
}

// gatewayModel is the state the accepted requests imply.
type gatewayModel struct {
	utf8   bool
	groups map[string]*modelGroup
	// maybe holds the keys of absent groups that a push was rejected for
	// since the last check: the gateway may have created them with only a
	// failure time (a rejected consistency check), or not (a request
	// refused before the store saw it). The next check tells.
	maybe map[string]map[string]string
}

// newModel returns the model of an empty gateway.
func newModel(utf8 bool) *gatewayModel {
	return &gatewayModel{utf8: utf8, groups: map[string]*modelGroup{}, maybe: map[string]map[string]string{}}
}

// keyOf returns the grouping key op means to this gateway.
func (m *gatewayModel) keyOf(o *op) map[string]string {
	if m.utf8 {
		return o.keyUTF8
	}
	return o.key
}

// apply updates the model for op's answer status.
func (m *gatewayModel) apply(o *op, status int) {
	ok := status >= 200 && status < 300
	switch o.kind {
	case opPush:
		key := m.keyOf(o)
		ks := keyString(key)
		if !ok {
			m.rejected(key)
			return
		}
		g := m.groups[ks]
		if g == nil {
			g = &modelGroup{key: key, fams: map[string]*dto.MetricFamily{}, failKnown: true}
			if _, maybe := m.maybe[ks]; maybe {
				// A rejected push may have created it with a failure
				// time.
				g.failKnown, g.failMayChange = false, true
				delete(m.maybe, ks)
			}
			m.groups[ks] = g
		}
		if o.method == "PUT" {
			g.fams = map[string]*dto.MetricFamily{}
		}
		for _, mf := range o.families {
			g.fams[mf.GetName()] = sanitize(mf, key)
		}
		g.pushChanged = true
		g.failureOnly = false
	case opDelete:
		if ok {
			delete(m.groups, keyString(m.keyOf(o)))
			delete(m.maybe, keyString(m.keyOf(o)))
		}
	case opWipe:
		if ok {
			m.groups = map[string]*modelGroup{}
			m.maybe = map[string]map[string]string{}
		}
	case opAdminDelete:
		if !ok {
			return
		}
		for ks, g := range m.groups {
			for _, sel := range o.selectors {
				if sel.matches(g.key) {
					delete(m.groups, ks)
					break
				}
			}
		}
	}
}

// rejected notes a push that got an error status: the groups of the same
// key identity may record a failure time, and an absent group may be
// created with one.
func (m *gatewayModel) rejected(key map[string]string) {
	id := keyIdentity(key)
	for _, g := range m.groups {
		if keyIdentity(g.key) == id {
			g.failMayChange = true
		}
	}
	if ks := keyString(key); m.groups[ks] == nil {
		m.maybe[ks] = key
	}
}

// sanitize returns mf as the gateway stores it for a group: grouping labels
// replace body labels of the same name, missing grouping labels are added,
// and so is instance="" when there is no instance label. Classic buckets
// are in increasing order of upper bound (DESIGN §5: Prometheus' protobuf
// parser stops at +Inf, so a bucket pushed after it must move before it for
// the text and protobuf scrapes to hold the same series).
func sanitize(mf *dto.MetricFamily, key map[string]string) *dto.MetricFamily {
	out := proto.Clone(mf).(*dto.MetricFamily)
	for _, m := range out.Metric {
		var lps []*dto.LabelPair
		hasInstance := false
		for _, lp := range m.Label {
			if _, grouping := key[lp.GetName()]; grouping {
				continue
			}
			if lp.GetName() == "instance" {
				hasInstance = true
			}
			lps = append(lps, lp)
		}
		for n, v := range key {
			if n == "instance" {
				hasInstance = true
			}
			lps = append(lps, &dto.LabelPair{Name: proto.String(n), Value: proto.String(v)})
		}
		if !hasInstance {
			lps = append(lps, &dto.LabelPair{Name: proto.String("instance"), Value: proto.String("")})
		}
		sort.Slice(lps, func(i, j int) bool { return lps[i].GetName() < lps[j].GetName() })
		m.Label = lps
		if h := m.GetHistogram(); h != nil {
			sort.SliceStable(h.Bucket, func(i, j int) bool {
				return cmp.Less(h.Bucket[i].GetUpperBound(), h.Bucket[j].GetUpperBound())
			})
		}
	}
	return out
}

// families returns every family of every group, in a fixed order.
func (m *gatewayModel) families() []*dto.MetricFamily {
	keys := make([]string, 0, len(m.groups))
	for ks := range m.groups {
		keys = append(keys, ks)
	}
	sort.Strings(keys)
	var out []*dto.MetricFamily
	for _, ks := range keys {
		g := m.groups[ks]
		names := make([]string, 0, len(g.fams))
		for n := range g.fams {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			out = append(out, g.fams[n])
		}
	}
	return out
}
