package store

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/journal/gobfile"
)

// ImportResult counts what Import did with a reference file's groups.
type ImportResult struct {
	// Groups is the number of groups imported whole.
	Groups int
	// Partial is the number of groups imported without some of their
	// families (each dropped family is logged).
	Partial int
	// Merged is the number of groups whose families went, where they fit,
	// into an imported group that is the same group to Prometheus (their
	// grouping keys differ only by labels with empty values).
	Merged int
	// DroppedGroups is the number of groups of which nothing was imported
	// (each is logged with its key and the reason).
	DroppedGroups int
	// DroppedFamilies is the number of pushed families left out, dropped
	// groups' included.
	DroppedFamilies int
}

// Import loads groups read from a reference Pushgateway persistence file.
// Their push_time_seconds and push_failure_time_seconds families become the
// groups' push times. Every group goes through the same checks as a push:
// the reference loads its file unchecked, so it can hold groups that
// conflict (the store it served failed every scrape), and a group that
// fails them cannot be imported as it is.
//
// Conflicts are resolved so that no pushed data is lost that could be kept:
// groups holding pushed families are imported before groups holding only
// push times (such as the empty group a rejected push leaves behind), the
// most recently pushed first; a group that does not fit whole is imported
// with as many of its families as fit; and a group whose key equals an
// imported group's but for labels with empty values (the same series to
// Prometheus) adds its families to that group where they fit. Every group
// and family left out is logged at warning level with its key and reason.
func (s *Store) Import(groups []gobfile.Group) ImportResult {
	stored := make([]storedGroup, 0, len(groups))
	for _, rg := range groups {
		stored = append(stored, importedGroup(rg))
	}
	slices.SortStableFunc(stored, importOrder)

	var res ImportResult
	// byIdentity holds each imported group as it was installed, by the ID
	// of its key without empty-valued labels.
	byIdentity := make(map[string]*storedGroup, len(stored))
	for _, sg := range stored {
		identity := identityID(sg.key)
		if base := byIdentity[identity]; base != nil {
			kept, dropped := s.addFamilies(base, sg.families, sg.key)
			res.DroppedFamilies += dropped
			switch {
			case kept > 0:
				res.Merged++
				s.logger.Warn("imported group merged into the same group to Prometheus", "group", sg.key.String(), "into", base.key.String(), "families_kept", kept, "families_dropped", dropped)
			case len(sg.families) == 0:
				res.DroppedGroups++
				s.logger.Warn("imported group dropped", "group", sg.key.String(),
					"reason", fmt.Sprintf("it holds only push times, and for Prometheus they are those of group %s, which holds pushed data or was pushed more recently", base.key))
			default:
				res.DroppedGroups++
				s.logger.Warn("imported group dropped", "group", sg.key.String(),
					"reason", fmt.Sprintf("none of its families fit into group %s, the same group for Prometheus, imported first", base.key), "families", len(sg.families))
			}
			continue
		}
		if err := s.restoreGroup(sg); err == nil {
			res.Groups++
			byIdentity[identity] = &sg
			continue
		}
		// Not whole: its push times alone, then each family that fits.
		base := sg
		base.families = nil
		if err := s.restoreGroup(base); err != nil {
			res.DroppedGroups++
			res.DroppedFamilies += len(sg.families)
			s.logger.Warn("imported group dropped", "group", sg.key.String(), "reason", err.Error(), "families", len(sg.families))
			continue
		}
		_, dropped := s.addFamilies(&base, sg.families, sg.key)
		res.DroppedFamilies += dropped
		res.Partial++
		byIdentity[identity] = &base
	}
	return res
}

// importedGroup converts a reference group.
func importedGroup(rg gobfile.Group) storedGroup {
	sg := storedGroup{key: NewGroupKey(rg.Labels)}
	for _, f := range rg.Families {
		switch f.Family.GetName() {
		case PushTimeName:
			sg.pushTime = gaugeTime(f.Family)
		case PushFailureTimeName:
			sg.failTime = gaugeTime(f.Family)
		default:
			sg.families = append(sg.families, storedFamily{mf: f.Family, lastPush: f.LastPush})
		}
	}
	return sg
}

// importOrder orders groups for Import: groups with pushed families first,
// then the most recent successful push first, then by key.
func importOrder(a, b storedGroup) int {
	if ad, bd := len(a.families) > 0, len(b.families) > 0; ad != bd {
		if ad {
			return -1
		}
		return 1
	}
	if c := b.pushTime.Compare(a.pushTime); c != 0 {
		return c
	}
	return strings.Compare(a.key.ID(), b.key.ID())
}

// identityID returns the ID of key without its empty-valued labels: two
// keys with the same identity ID give the same series to Prometheus.
func identityID(key GroupKey) string {
	labels := make(map[string]string, len(key.Labels()))
	for _, l := range key.Labels() {
		if l.Value != "" {
			labels[l.Name] = l.Value
		}
	}
	return NewGroupKey(labels).ID()
}

// addFamilies adds to the installed group base, one at a time, each of
// fams (from the group from) whose name base lacks and that passes the
// checks, reinstalling base each time; the others are logged and left out.
// It returns how many were kept and dropped.
func (s *Store) addFamilies(base *storedGroup, fams []storedFamily, from GroupKey) (kept, dropped int) {
	for _, f := range fams {
		name := f.mf.GetName()
		if slices.ContainsFunc(base.families, func(b storedFamily) bool { return b.mf.GetName() == name }) {
			dropped++
			s.logger.Warn("imported family dropped", "group", from.String(), "family", name,
				"reason", fmt.Sprintf("group %s, imported first, holds a family of that name", base.key))
			continue
		}
		next := *base
		next.families = append(slices.Clip(base.families), f)
		if err := s.restoreGroup(next); err != nil {
			dropped++
			s.logger.Warn("imported family dropped", "group", from.String(), "family", name, "reason", err.Error())
			continue
		}
		*base = next
		kept++
	}
	return kept, dropped
}

// gaugeTime reads a timestamp family's value as a time; 0 is the zero time.
func gaugeTime(mf *dto.MetricFamily) time.Time {
	if len(mf.Metric) == 0 {
		return time.Time{}
	}
	v := mf.Metric[0].GetGauge().GetValue()
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return time.Time{}
	}
	sec, frac := math.Modf(v)
	return time.Unix(int64(sec), int64(frac*1e9))
}
