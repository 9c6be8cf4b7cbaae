package admission

import (
	"fmt"
	"unicode/utf8"

	"github.com/pushgate/pushgate/limits"
)

// checkPushSeries refuses a push of n series (metrics of all families) when
// n is over the limit. Called with a count, before any per-series work, it
// refuses a huge push cheaply.
func checkPushSeries(l limits.Limits, n int) error {
	if l.MaxSeriesPerPush > 0 && n > l.MaxSeriesPerPush {
		return overLimit(ReasonTooManySeries, "push has %d series; --push.max-series is %d", n, l.MaxSeriesPerPush)
	}
	return nil
}

// TooManySeries returns the refusal of a push the decoder stopped at
// --push.max-series (exposition.ErrTooManySeries) before it counted them
// all; err says how far it got.
func TooManySeries(l limits.Limits, err error) *Error {
	return overLimit(ReasonTooManySeries, "%v; --push.max-series is %d", err, l.MaxSeriesPerPush)
}

// checkMetricName checks a metric name's length, which is the value of
// __name__.
func checkMetricName(l limits.Limits, name string) error {
	if l.MaxLabelValueLength > 0 && len(name) > l.MaxLabelValueLength {
		return overLimit(ReasonLabelValueTooLong, "metric name %q has %d bytes; --push.max-label-value-length is %d",
			clipString(name), len(name), l.MaxLabelValueLength)
	}
	return nil
}

// checkLabel checks the lengths of one label's name and value; metric is ""
// for a grouping label.
//
// It runs for every label of every pushed series, so the place named in the
// error is built only on failure: building it up front was 13% of a push's
// CPU.
func checkLabel(l limits.Limits, metric, name, value string) error {
	if l.MaxLabelNameLength > 0 && len(name) > l.MaxLabelNameLength {
		return overLimit(ReasonLabelNameTooLong, "%s: label name %q has %d bytes; --push.max-label-name-length is %d",
			labelPlace(metric), clipString(name), len(name), l.MaxLabelNameLength)
	}
	if l.MaxLabelValueLength > 0 && len(value) > l.MaxLabelValueLength {
		return overLimit(ReasonLabelValueTooLong, "%s: value of label %q has %d bytes; --push.max-label-value-length is %d",
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
func checkLabelCount(l limits.Limits, metric string, n int) error {
	if l.MaxLabelsPerSeries > 0 && n > l.MaxLabelsPerSeries {
		return overLimit(ReasonTooManyLabels, "metric %q has a series with %d labels, grouping labels included; --push.max-labels-per-series is %d",
			metric, n, l.MaxLabelsPerSeries)
	}
	return nil
}

// Capacity refuses a change that adds groups or series to a store already
// at its limits (stage 4), with a StoreFull *Error. groups and series are
// what the store holds. Only the net change counts: replacing a group by
// one of the same size always passes, and a change that shrinks the store
// always passes even when the store is over a limit that was lowered since.
func Capacity(l limits.Limits, groups, series, addGroups, addSeries int) error {
	if l.MaxGroups > 0 && addGroups > 0 && groups+addGroups > l.MaxGroups {
		return &Error{Class: StoreFull, Reason: ReasonStoreFullGroups,
			Msg: fmt.Sprintf("store is full: it holds %d groups; --store.max-groups is %d", groups, l.MaxGroups)}
	}
	if l.MaxSeries > 0 && addSeries > 0 && series+addSeries > l.MaxSeries {
		return &Error{Class: StoreFull, Reason: ReasonStoreFullSeries,
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
