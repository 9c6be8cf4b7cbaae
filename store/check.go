package store

import (
	"fmt"
	"hash/maphash"

	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/limits"
	"github.com/pushgate/pushgate/seriesid"
)

// Names of the synthetic families the gateway keeps for every group. Pushed
// families with these names are rejected: the gateway owns them.
const (
	PushTimeName        = "push_time_seconds"
	PushFailureTimeName = "push_failure_time_seconds"
)

// preparedFamily is a pushed family after sanitizing and the checks that need
// nothing but the push itself.
type preparedFamily struct {
	mf     *dto.MetricFamily
	series []uint64
	// plain is exposition.LegacyNames(mf): every name in it is a legacy
	// one, so its text is rendered at push time.
	plain bool
	// labels holds the family's distinct label names, sorted, under the
	// UTF-8 name rules only (the index keeps them apart under every
	// escaping); nil otherwise.
	labels []string
}

// prepare sanitizes families for the group key (grouping labels overwrite
// body labels, a missing instance label becomes instance="", labels are
// sorted) and checks everything that needs no store state: reserved names,
// timestamps, value/type agreement, label names and values, reserved labels
// of summaries and histograms, duplicate series inside the push, and the
// per-push limits in lim (a *limits.Error). It modifies the families in place.
//
// Allocations are per push, not per series: the sanitized label slices of
// all metrics are cut from one array, the grouping and instance="" pairs
// are shared by every metric, and one map finds duplicates in every family.
// The families' label pairs themselves are not copied, so the result must
// not outlive the families' memory; the store keeps only what newFamily
// encodes from them.
func prepare(key groupkey.Key, families []*dto.MetricFamily, utf8Names bool, lim limits.Limits, seed maphash.Seed) ([]preparedFamily, error) {
	n := 0
	for _, mf := range families {
		n += len(mf.Metric)
	}
	if err := lim.CheckPushSeries(n); err != nil {
		return nil, err
	}
	for _, l := range key.Labels() {
		if err := lim.CheckGroupingLabel(l.Name, l.Value); err != nil {
			return nil, err
		}
	}
	labeler := key.Labeler(utf8Names, lim)
	// Under the legacy name rules every metric and label name is checked
	// below against them, so with a legacy grouping key only a family's
	// exemplar label names remain to be looked at to know it is plain (a
	// second look at every name was 3.7% of a text push's CPU,
	// BenchmarkPush).
	allLegacy := !utf8Names
	for _, l := range key.Labels() {
		allLegacy = allLegacy && exposition.ValidLabelName(l.Name, false)
	}
	if utf8Names {
		for _, l := range key.Labels() {
			if err := seriesid.CheckLabelNameEscapes("", l.Name); err != nil {
				return nil, err
			}
		}
	}

	slabSize, maxMetrics, totalMetrics := 0, 0, 0
	for _, mf := range families {
		totalMetrics += len(mf.Metric)
		for _, m := range mf.Metric {
			slabSize += len(m.Label) + labeler.Extra()
		}
		maxMetrics = max(maxMetrics, len(mf.Metric))
	}
	slab := make([]*dto.LabelPair, 0, slabSize)
	hashSlab := make([]uint64, 0, totalMetrics)
	seen := make(map[uint64]struct{}, maxMetrics)

	var h maphash.Hash
	h.SetSeed(seed)
	out := make([]preparedFamily, 0, len(families))
	for _, mf := range families {
		name := mf.GetName()
		if name == PushTimeName || name == PushFailureTimeName {
			return nil, fmt.Errorf("metric name %q is reserved for the gateway's own push timestamps", name)
		}
		if !exposition.ValidMetricName(name, utf8Names) {
			return nil, fmt.Errorf("invalid metric name %q", name)
		}
		if err := lim.CheckMetricName(name); err != nil {
			return nil, err
		}
		clear(seen)
		// One slab holds the series hashes of every family of the push.
		hashes := hashSlab[len(hashSlab) : len(hashSlab) : len(hashSlab)+len(mf.Metric)]
		hashSlab = hashSlab[:len(hashSlab)+len(mf.Metric)]
		for _, m := range mf.Metric {
			if m.TimestampMs != nil {
				return nil, fmt.Errorf("pushed metrics must not have timestamps: metric %q has one", name)
			}
			if err := exposition.CheckMetricValue(mf.GetType(), m); err != nil {
				return nil, fmt.Errorf("metric %q: %w", name, err)
			}
			if err := exposition.CheckExemplars(m); err != nil {
				return nil, fmt.Errorf("metric %q: %w", name, err)
			}
			if err := seriesid.CheckSampleSeries(mf.GetType(), m); err != nil {
				return nil, fmt.Errorf("metric %q: %w", name, err)
			}
			// Room for this metric's labels, capped so that appending
			// cannot run into the next metric's.
			room := slab[len(slab) : len(slab) : len(slab)+len(m.Label)+labeler.Extra()]
			labels, err := labeler.Labels(room, name, m.Label)
			if err != nil {
				return nil, err
			}
			slab = slab[:len(slab)+len(labels)]
			if err := lim.CheckLabelCount(name, len(labels)); err != nil {
				return nil, err
			}
			m.Label = labels
			if err := seriesid.CheckReservedLabels(mf.GetType(), labels); err != nil {
				return nil, fmt.Errorf("metric %q: %w", name, err)
			}
			sh := seriesid.Hash(&h, name, labels)
			if _, dup := seen[sh]; dup {
				return nil, fmt.Errorf("duplicate series %s in the push", seriesid.String(name, labels))
			}
			seen[sh] = struct{}{}
			hashes = append(hashes, sh)
		}
		pf := preparedFamily{mf: mf, series: hashes}
		if allLegacy {
			pf.plain = exposition.LegacyExemplarNames(mf)
		} else {
			pf.plain = exposition.LegacyNames(mf)
		}
		if utf8Names {
			pf.labels = seriesid.FamilyLabelNames(mf)
			for _, l := range pf.labels {
				if err := seriesid.CheckLabelNameEscapes(name, l); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, pf)
	}
	return out, nil
}
