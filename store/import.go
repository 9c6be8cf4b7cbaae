package store

import (
	"math"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/journal/gobfile"
)

// Import loads groups read from a reference Pushgateway persistence file.
// Their push_time_seconds and push_failure_time_seconds families become the
// groups' push times. Each group goes through the same checks as a push; a
// group that fails them is skipped with a warning (the reference loads such
// files unchecked, so they can hold inconsistent data).
func (s *Store) Import(groups []gobfile.Group) (imported, skipped int) {
	for _, rg := range groups {
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
		if err := s.restoreGroup(sg); err != nil {
			s.logger.Warn("imported group skipped", "group", sg.key.String(), "err", err)
			skipped++
			continue
		}
		imported++
	}
	return imported, skipped
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

// JournalOps returns one Set op per stored group: the whole state, for
// writing a fresh journal (after an import).
func (s *Store) JournalOps() []journal.Op {
	groups := s.Groups()
	ops := make([]journal.Op, 0, len(groups))
	for _, g := range groups {
		ops = append(ops, journal.Op{Kind: journal.OpSet, Key: g.key.ID(), Value: encodeGroup(g)})
	}
	return ops
}

// Reserve registers the gateway's own metric families: pushed families of
// the same names must have the same type, the built-in HELP wins, and no
// pushed family may expose a name one of them exposes (claims). Call it
// before serving, with every family the gateway can ever expose.
func (s *Store) Reserve(builtin []*dto.MetricFamily) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, mf := range builtin {
		s.index.reserve(mf.GetName(), mf.GetType(), mf.GetHelp())
	}
}
