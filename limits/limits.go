// Package limits holds the bounds on what one push may hold and what the
// whole store may hold, the checks that apply them, and the error a
// refused push carries. It knows nothing of groups: the store calls its
// checks with the counts and names it finds.
package limits

import (
	"fmt"
	"unicode/utf8"
)

// Limits bounds what one push may hold and what the whole store may hold.
// A zero field means no limit. The per-push limits reject a push with a
// *Error whose StoreFull is false (the client sent too much: 400); the
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

// Default returns the default limits (each Setting's Default).
func Default() Limits {
	var l Limits
	for _, s := range Settings() {
		*s.Field(&l) = s.Default
	}
	return l
}

// Reasons an Error carries; they are the reason label of
// pushgate_rejected_requests_total.
const (
	ReasonTooManySeries     = "too_many_series"
	ReasonTooManyLabels     = "too_many_labels"
	ReasonLabelNameTooLong  = "label_name_too_long"
	ReasonLabelValueTooLong = "label_value_too_long"
	ReasonStoreFullGroups   = "store_full_groups"
	ReasonStoreFullSeries   = "store_full_series"
)

// Error reports a push rejected by a limit. Nothing was stored, not even
// the group's push_failure_time_seconds: a full store must not grow, and a
// push too large to check is treated like a body over the size limit.
type Error struct {
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
func (e *Error) Error() string { return e.Msg }

func limitErr(reason, format string, args ...any) *Error {
	return &Error{Reason: reason, Msg: fmt.Sprintf(format, args...)}
}

// CheckPushSeries rejects a push of n series (metrics of all families)
// when n is over the limit. Called with a count, before any per-series
// work, it rejects a huge push cheaply.
func (l Limits) CheckPushSeries(n int) error {
	if l.MaxSeriesPerPush > 0 && n > l.MaxSeriesPerPush {
		return limitErr(ReasonTooManySeries, "push has %d series; --push.max-series is %d", n, l.MaxSeriesPerPush)
	}
	return nil
}

// CheckGroupingLabel checks the name and value lengths of one grouping label,
// so that the HTTP layer can refuse a push by its path before reading the
// body. It returns a *Error or nil.
func (l Limits) CheckGroupingLabel(name, value string) error {
	return l.CheckLabel("", name, value)
}

// CheckMetricName checks a metric name, which is the value of __name__.
func (l Limits) CheckMetricName(name string) error {
	if l.MaxLabelValueLength > 0 && len(name) > l.MaxLabelValueLength {
		return limitErr(ReasonLabelValueTooLong, "metric name %q has %d bytes; --push.max-label-value-length is %d",
			clipString(name), len(name), l.MaxLabelValueLength)
	}
	return nil
}

// CheckLabel checks one label's name and value; metric is "" for a
// grouping label.
//
// It runs for every label of every pushed series, so the place named in the
// error is built only on failure: building it up front was 13% of a push's
// CPU.
func (l Limits) CheckLabel(metric, name, value string) error {
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

// CheckLabelCount checks the number of labels of one series as stored.
func (l Limits) CheckLabelCount(metric string, n int) error {
	if l.MaxLabelsPerSeries > 0 && n > l.MaxLabelsPerSeries {
		return limitErr(ReasonTooManyLabels, "metric %q has a series with %d labels, grouping labels included; --push.max-labels-per-series is %d",
			metric, n, l.MaxLabelsPerSeries)
	}
	return nil
}

// CheckStore rejects a change that adds groups or series to a store already
// at its limits. Only the net change counts: replacing a group by one of the
// same size always passes, and a change that shrinks the store always passes
// even when the store is over a limit that was lowered since.
func (l Limits) CheckStore(groups, series, addGroups, addSeries int) error {
	if l.MaxGroups > 0 && addGroups > 0 && groups+addGroups > l.MaxGroups {
		return &Error{Reason: ReasonStoreFullGroups, StoreFull: true,
			Msg: fmt.Sprintf("store is full: it holds %d groups; --store.max-groups is %d", groups, l.MaxGroups)}
	}
	if l.MaxSeries > 0 && addSeries > 0 && series+addSeries > l.MaxSeries {
		return &Error{Reason: ReasonStoreFullSeries, StoreFull: true,
			Msg: fmt.Sprintf("store is full: it holds %d series and the push adds %d; --store.max-series is %d", series, addSeries, l.MaxSeries)}
	}
	return nil
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
