// Package limits holds the bounds on what one push may hold and what the
// whole store may hold, as one table (Settings) that the flags, the own
// metrics and the cluster's settings check all read. The checks that apply
// them are stages of package admission.
package limits

// Limits bounds what one push may hold and what the whole store may hold.
// A zero field means no limit. The per-push limits refuse a push as
// admission.OverLimit (the client sent too much: 400); the store limits
// refuse it as admission.StoreFull (the gateway is full: 507).
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
