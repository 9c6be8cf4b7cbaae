package admission

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
// families with these names are refused: the gateway owns them.
const (
	PushTimeName        = "push_time_seconds"
	PushFailureTimeName = "push_failure_time_seconds"
)

// Family is a pushed family after sanitizing and the checks that need
// nothing but the push itself, with what the store keeps of its identity.
type Family struct {
	MF *dto.MetricFamily
	// Series holds one hash per metric (seriesid.Family's hash of its
	// name and sanitized labels), in the order of MF.Metric.
	Series []uint64
	// Plain says that every name in MF is a legacy one (seriesid.Family),
	// so its text can be rendered once for every escaping.
	Plain bool
	// Labels holds the family's distinct label names, sorted, under the
	// UTF-8 name rules only (the index keeps them apart under every
	// escaping); nil otherwise.
	Labels []string
}

// Options are the rules a push is checked by.
type Options struct {
	// UTF8Names accepts UTF-8 metric and label names.
	UTF8Names bool
	// Limits bounds what one push may hold.
	Limits limits.Limits
	// Seed is the store's series hash seed.
	Seed maphash.Seed
}

// Check runs stages 1 to 3 on a push of families under key: it sanitizes
// them for the group key (grouping labels overwrite
// body labels, a missing instance label becomes instance="", labels are
// sorted) and checks everything that needs no store state: reserved names,
// timestamps, value/type agreement, label names and values, reserved labels
// of summaries and histograms, duplicate series inside the push, and the
// per-push limits. A refusal is an *Error: OverLimit for a limit, Refused
// for the rest. It modifies the families in place.
//
// Allocations are per push, not per series: the sanitized label slices of
// all metrics are cut from one array, the grouping and instance="" pairs
// are shared by every metric, and one map finds duplicates in every family.
// The families' label pairs themselves are not copied, so the result must
// not outlive the families' memory; the store keeps only what it encodes
// from them.
func Check(key groupkey.Key, families []*dto.MetricFamily, opts Options) ([]Family, error) {
	return CheckWith(key, families, opts, nil)
}

// Scratch holds the buffers Check builds a push's label sets and its
// result in, for the next push to reuse. The zero value is ready to use.
// Reusing them takes 1.9 KB of garbage (a fifth of the store's) off every
// push of the bench payload.
type Scratch struct {
	labels []*dto.LabelPair
	out    []Family
}

// The largest buffers a Scratch keeps (1 MiB each), so that one huge push
// does not pin its memory.
const (
	maxScratchLabels   = 1 << 17
	maxScratchFamilies = 1 << 14
)

// Reset forgets what the last Check put in sc, so that a kept Scratch does
// not keep the push's memory alive, and drops a buffer grown past its
// bound. It clears the label pairs the last Check used, not the whole
// buffer, which one large push may have grown far past what the next ones
// use; the result's entries are few and cleared to their capacity, since
// the caller may have appended to it.
func (sc *Scratch) Reset() {
	clear(sc.labels)
	clear(sc.out[:cap(sc.out)])
	sc.labels, sc.out = sc.labels[:0], sc.out[:0]
	if cap(sc.labels) > maxScratchLabels {
		sc.labels = nil
	}
	if cap(sc.out) > maxScratchFamilies {
		sc.out = nil
	}
}

// CheckWith is Check with the buffers of sc (nil: fresh ones). The
// families' label sets and the returned slice then live in sc: neither may
// be used once sc is reset or given to another Check.
func CheckWith(key groupkey.Key, families []*dto.MetricFamily, opts Options, sc *Scratch) ([]Family, error) {
	out, err := check(key, families, opts, sc)
	if err != nil {
		return nil, Refusal(err)
	}
	return out, nil
}

// check is CheckWith, with the refusals not yet made *Errors.
func check(key groupkey.Key, families []*dto.MetricFamily, opts Options, sc *Scratch) ([]Family, error) {
	utf8Names, lim := opts.UTF8Names, opts.Limits
	n := 0
	for _, mf := range families {
		n += len(mf.Metric)
	}
	if err := checkPushSeries(lim, n); err != nil {
		return nil, err
	}
	if err := GroupingLimits(key, lim); err != nil {
		return nil, err
	}
	labeler := newLabeler(key, utf8Names, lim)
	if utf8Names {
		if err := groupingEscapes(key); err != nil {
			return nil, err
		}
	}

	slabSize, maxMetrics, totalMetrics := 0, 0, 0
	for _, mf := range families {
		totalMetrics += len(mf.Metric)
		for _, m := range mf.Metric {
			slabSize += len(m.Label) + labeler.extra()
		}
		maxMetrics = max(maxMetrics, len(mf.Metric))
	}
	if sc == nil {
		sc = &Scratch{}
	}
	if cap(sc.labels) < slabSize {
		sc.labels = make([]*dto.LabelPair, 0, slabSize)
	}
	if cap(sc.out) < len(families) {
		sc.out = make([]Family, 0, len(families))
	}
	slab := sc.labels[:0]
	// Not from sc: the families the store keeps hold their hashes.
	hashSlab := make([]uint64, 0, totalMetrics)
	seen := make(map[uint64]struct{}, maxMetrics)

	// One identity for every family of the push: the same rule the store
	// applies to families it restores or replicates.
	var id seriesid.Family
	out := sc.out[:0]
	// What was used, refused pushes included, is what Reset clears.
	defer func() { sc.labels, sc.out = slab, out }()
	for _, mf := range families {
		name := mf.GetName()
		if name == PushTimeName || name == PushFailureTimeName {
			return nil, fmt.Errorf("metric name %q is reserved for the gateway's own push timestamps", name)
		}
		if !exposition.ValidMetricName(name, utf8Names) {
			return nil, fmt.Errorf("invalid metric name %q", name)
		}
		if err := checkMetricName(lim, name); err != nil {
			return nil, err
		}
		clear(seen)
		id.Start(opts.Seed, name, utf8Names)
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
			if err := checkExemplars(m); err != nil {
				return nil, fmt.Errorf("metric %q: %w", name, err)
			}
			if err := checkSampleSeries(mf.GetType(), m); err != nil {
				return nil, fmt.Errorf("metric %q: %w", name, err)
			}
			// Room for this metric's labels, capped so that appending
			// cannot run into the next metric's.
			room := slab[len(slab) : len(slab) : len(slab)+len(m.Label)+labeler.extra()]
			labels, err := labeler.labels(room, name, m.Label)
			if err != nil {
				return nil, err
			}
			slab = slab[:len(slab)+len(labels)]
			if err := checkLabelCount(lim, name, len(labels)); err != nil {
				return nil, err
			}
			m.Label = labels
			if err := checkReservedLabels(mf.GetType(), labels); err != nil {
				return nil, fmt.Errorf("metric %q: %w", name, err)
			}
			sh := id.Series(labels)
			if _, dup := seen[sh]; dup {
				return nil, fmt.Errorf("duplicate series %s in the push", seriesid.String(name, labels))
			}
			seen[sh] = struct{}{}
			hashes = append(hashes, sh)
		}
		pf := Family{MF: mf, Series: hashes, Plain: id.Plain(mf), Labels: id.LabelNames()}
		if utf8Names {
			for _, l := range pf.Labels {
				if err := seriesid.CheckLabelNameEscapes(name, l); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, pf)
	}
	return out, nil
}
