package store

import (
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/groupcodec"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/limits"
)

// ImportedGroup is a group read from outside the store, such as a reference
// Pushgateway persistence file, for Import.
type ImportedGroup struct {
	// Key is the group's grouping key.
	Key groupkey.Key
	// PushTime is the time of the group's last successful push, and
	// FailureTime that of its last failed one; the zero time is never.
	PushTime, FailureTime time.Time
	// Families are the group's pushed families. They do not include
	// push_time_seconds or push_failure_time_seconds, which the store
	// derives from the times above (and refuses as pushed names).
	Families []ImportedFamily
}

// ImportedFamily is one pushed family of an ImportedGroup.
type ImportedFamily struct {
	// Family is the family as pushed.
	Family *dto.MetricFamily
	// LastPush is when the family was last pushed.
	LastPush time.Time
}

// Import installs g in place of any group with the same key, after the same
// checks as a push: names, values and series, and consistency with every
// other group. Limits are not applied: the group was acknowledged once, and
// a limit lowered since does not drop it. On error the store is unchanged.
//
// Like a push, Import rewrites the labels of the families' series (grouping
// labels forced to the key's values, instance="" added where missing), and
// the store keeps the families: the caller must not change them afterwards,
// though it may pass them to Import again, alone or in another group.
//
// Import writes nothing to the journal. It is for filling a store before it
// serves; JournalOps then gives the whole state for a fresh journal.
func (s *Store) Import(g ImportedGroup) error {
	mfs := make([]*dto.MetricFamily, len(g.Families))
	for i, f := range g.Families {
		mfs[i] = f.Family
	}
	// No limits: a group already acknowledged is never dropped because a
	// limit was lowered since; the running totals still count it.
	prepared, err := prepare(g.Key, mfs, s.opts.UTF8Names, limits.Limits{}, s.seed, nil)
	if err != nil {
		return err
	}
	ng := &Group{key: g.Key, pushTime: g.PushTime, failTime: g.FailureTime, families: make(familySet, 0, len(prepared)+2)}
	enc := s.render.encoding()
	var sc scratch
	for i, pf := range prepared {
		f, err := newFamily(pf, groupcodec.UnixNanos(g.Families[i].LastPush), enc, false, &sc)
		if err != nil {
			return err
		}
		ng.families.put(f)
	}
	return s.installChecked(ng, s.addTimeFamilies(ng, nil, prepared, enc, &sc))
}
