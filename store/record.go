package store

import (
	"fmt"

	"github.com/pushgate/pushgate/groupcodec"
	"github.com/pushgate/pushgate/groupkey"
)

// encodeGroup returns g's record for the journal (groupcodec): its key,
// times and pushed families, each with its s2 block as the family holds it
// (nothing is decompressed), or, for a family kept as a skeleton and a
// value area, compressed again (render.Cache.Block). The time families are
// left out; a restore rebuilds them from the times.
func encodeGroup(g *Group) ([]byte, error) {
	rec := groupcodec.Group{
		Labels:        make([]groupcodec.Label, len(g.key.Labels())),
		PushTime:      g.pushTime,
		FailureTime:   g.failTime,
		FailureReason: g.failReason,
		Families:      make([]groupcodec.Family, 0, len(g.families)),
	}
	for i, l := range g.key.Labels() {
		rec.Labels[i] = groupcodec.Label{Name: l.Name, Value: l.Value}
	}
	for _, f := range g.Families() {
		name := f.Name()
		if name == PushTimeName || name == PushFailureTimeName {
			continue
		}
		packed, err := f.cache.Block()
		if err != nil {
			return nil, fmt.Errorf("encode group %s, family %s: %w", g.key, name, err)
		}
		rec.Families = append(rec.Families, groupcodec.Family{
			Name: name, Help: f.Help(), Unit: f.Unit(), Type: f.Type(), LastPush: f.LastPush(), Packed: packed, State: f.State(),
		})
	}
	return groupcodec.Encode(&rec), nil
}

// recordKey returns the grouping key of a decoded record.
func recordKey(rec *groupcodec.Group) groupkey.Key {
	labels := make(map[string]string, len(rec.Labels))
	for _, l := range rec.Labels {
		labels[l.Name] = l.Value
	}
	return groupkey.New(labels)
}
