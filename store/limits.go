package store

import (
	"fmt"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
)

// Limits bounds what one push may hold and what the whole store may hold.
// A zero field means no limit. The per-push limits reject a push with a
// *LimitError whose StoreFull is false (the client sent too much: 400); the
// store limits reject it with StoreFull true (the gateway is full: 507).
// Limits are not applied to groups restored from the journal or imported from
// a reference file: data already acknowledged is never dropped because a
// limit was lowered.
type Limits struct {
	// MaxSeriesPerPush bounds the series (metrics of all families) in one
	// push (--push.max-series).
	MaxSeriesPerPush int
	// MaxLabelsPerSeries bounds the labels of one pushed series as stored,
	// grouping labels and instance included (--push.max-labels-per-series).
	MaxLabelsPerSeries int
	// MaxLabelNameLength bounds a label name in bytes, in the body and in the
	// grouping key (--push.max-label-name-length).
	MaxLabelNameLength int
	// MaxLabelValueLength bounds a label value in bytes, in the body and in
	// the grouping key, and a metric name, which is the value of the
	// __name__ label (--push.max-label-value-length).
	MaxLabelValueLength int
	// MaxGroups bounds the groups in the store (--store.max-groups).
	MaxGroups int
	// MaxSeries bounds the series in the store, push_time_seconds and
	// push_failure_time_seconds included (--store.max-series).
	MaxSeries int
}

// Default limits. The per-push ones are far above what a batch job pushes
// (the client libraries' default registries hold a few hundred series with
// a handful of labels each) and stop only machine-generated abuse.
//
// The store ones protect a production box. Measured on this store (heap
// after GC, Go 1.26): a gauge series with six labels costs about 260 bytes
// (decoded metric, pre-rendered text, index entry), and a group with one
// pushed series about 1.8 KiB (key, two push-time families, scrape-order
// entries). So 20,000,000 plain series is about 5 GiB and 1,000,000 groups
// about 1.8 GiB: room for any real fleet on a modest host, while a runaway
// client (a timestamp or pod name in the grouping key) meets a clear 507
// long before the process is killed for memory. Histograms cost more per
// series (one count per bucket); lower --store.max-series if they dominate.
const (
	DefaultMaxSeriesPerPush    = 100_000
	DefaultMaxLabelsPerSeries  = 64
	DefaultMaxLabelNameLength  = 1024
	DefaultMaxLabelValueLength = 16384
	DefaultMaxGroups           = 1_000_000
	DefaultMaxSeries           = 20_000_000
)

// DefaultLimits returns the default limits.
func DefaultLimits() Limits {
	return Limits{
		MaxSeriesPerPush:    DefaultMaxSeriesPerPush,
		MaxLabelsPerSeries:  DefaultMaxLabelsPerSeries,
		MaxLabelNameLength:  DefaultMaxLabelNameLength,
		MaxLabelValueLength: DefaultMaxLabelValueLength,
		MaxGroups:           DefaultMaxGroups,
		MaxSeries:           DefaultMaxSeries,
	}
}

// Reasons a LimitError carries; they are the reason label of
// pushgate_rejected_requests_total.
const (
	ReasonTooManySeries     = "too_many_series"
	ReasonTooManyLabels     = "too_many_labels"
	ReasonLabelNameTooLong  = "label_name_too_long"
	ReasonLabelValueTooLong = "label_value_too_long"
	ReasonStoreFullGroups   = "store_full_groups"
	ReasonStoreFullSeries   = "store_full_series"
)

// LimitError reports a push rejected by a limit. Nothing was stored, not even
// the group's push_failure_time_seconds: a full store must not grow, and a
// push too large to check is treated like a body over the size limit.
type LimitError struct {
	// Reason is one of the Reason* constants.
	Reason string
	// StoreFull is true when the store as a whole is at a limit (the push
	// would fit an emptier store), false when the push itself is too large.
	StoreFull bool
	// Msg names the limit, the value found and, where there is one, the
	// offending metric.
	Msg string
}

// Error returns the one-line reason.
func (e *LimitError) Error() string { return e.Msg }

func limitErr(reason, format string, args ...any) *LimitError {
	return &LimitError{Reason: reason, Msg: fmt.Sprintf(format, args...)}
}

// checkPushSeries rejects a push with more series than the limit. It only
// counts, so a huge push is rejected before any per-series work.
func (l Limits) checkPushSeries(families []*dto.MetricFamily) error {
	if l.MaxSeriesPerPush <= 0 {
		return nil
	}
	n := 0
	for _, mf := range families {
		n += len(mf.Metric)
	}
	if n > l.MaxSeriesPerPush {
		return limitErr(ReasonTooManySeries, "push has %d series; --push.max-series is %d", n, l.MaxSeriesPerPush)
	}
	return nil
}

// checkGrouping checks the grouping key's label names and values.
func (l Limits) checkGrouping(key GroupKey) error {
	for _, lb := range key.labels {
		if err := l.CheckGroupingLabel(lb.Name, lb.Value); err != nil {
			return err
		}
	}
	return nil
}

// CheckGroupingLabel checks the name and value lengths of one grouping label,
// so that the HTTP layer can refuse a push by its path before reading the
// body. It returns a *LimitError or nil.
func (l Limits) CheckGroupingLabel(name, value string) error {
	return l.checkLabel("", name, value)
}

// checkMetricName checks a metric name, which is the value of __name__.
func (l Limits) checkMetricName(name string) error {
	if l.MaxLabelValueLength > 0 && len(name) > l.MaxLabelValueLength {
		return limitErr(ReasonLabelValueTooLong, "metric name %q has %d bytes; --push.max-label-value-length is %d",
			clipString(name), len(name), l.MaxLabelValueLength)
	}
	return nil
}

// checkLabel checks one label's name and value; metric is "" for a
// grouping label.
//
// It runs for every label of every pushed series, so the place named in the
// error is built only on failure: building it up front was 13% of a push's
// CPU.
func (l Limits) checkLabel(metric, name, value string) error {
	if l.MaxLabelNameLength > 0 && len(name) > l.MaxLabelNameLength {
		return limitErr(ReasonLabelNameTooLong, "%s: label name %q has %d bytes; --push.max-label-name-length is %d",
			labelPlace(metric), clipString(name), len(name), l.MaxLabelNameLength)
	}
	if l.MaxLabelValueLength > 0 && len(value) > l.MaxLabelValueLength {
		return limitErr(ReasonLabelValueTooLong, "%s: value of label %q has %d bytes; --push.max-label-value-length is %d",
			labelPlace(metric), clipString(name), len(value), l.MaxLabelValueLength)
	}
	return nil
}

// labelPlace names where a label sits, for errors: a metric, or the grouping
// key when metric is "".
func labelPlace(metric string) string {
	if metric == "" {
		return "grouping key"
	}
	return fmt.Sprintf("metric %q", metric)
}

// checkLabelCount checks the number of labels of one series as stored.
func (l Limits) checkLabelCount(metric string, n int) error {
	if l.MaxLabelsPerSeries > 0 && n > l.MaxLabelsPerSeries {
		return limitErr(ReasonTooManyLabels, "metric %q has a series with %d labels, grouping labels included; --push.max-labels-per-series is %d",
			metric, n, l.MaxLabelsPerSeries)
	}
	return nil
}

// checkStore rejects a change that adds groups or series to a store already
// at its limits. Only the net change counts: replacing a group by one of the
// same size always passes, and a change that shrinks the store always passes
// even when the store is over a limit that was lowered since.
func (l Limits) checkStore(groups, series, addGroups, addSeries int) error {
	if l.MaxGroups > 0 && addGroups > 0 && groups+addGroups > l.MaxGroups {
		return &LimitError{Reason: ReasonStoreFullGroups, StoreFull: true,
			Msg: fmt.Sprintf("store is full: it holds %d groups; --store.max-groups is %d", groups, l.MaxGroups)}
	}
	if l.MaxSeries > 0 && addSeries > 0 && series+addSeries > l.MaxSeries {
		return &LimitError{Reason: ReasonStoreFullSeries, StoreFull: true,
			Msg: fmt.Sprintf("store is full: it holds %d series and the push adds %d; --store.max-series is %d", series, addSeries, l.MaxSeries)}
	}
	return nil
}

// seriesDelta returns how many series replacing group old by next (either
// may be nil) adds to the store. Families shared by both are skipped, so the
// cost is that of the families of the two groups, as in install.
func seriesDelta(old, next *Group) int {
	d := 0
	if old != nil {
		for name, f := range old.families {
			if next != nil && next.families[name] == f {
				continue
			}
			d -= len(f.series)
		}
	}
	if next != nil {
		for name, f := range next.families {
			if old != nil && old.families[name] == f {
				continue
			}
			d += len(f.series)
		}
	}
	return d
}

// clipString shortens s for an error message, keeping valid UTF-8.
func clipString(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
