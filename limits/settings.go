package limits

// Setting is one limit as the gateway exposes it: its flag, the flag's
// help, its default, and the field of Limits it sets. Settings is the one
// list of them: the flags, the pushgate_limit metric and the cluster's
// settings check all read it, so that a new limit is added in one place.
type Setting struct {
	// Flag is the flag's name without the dashes, e.g. "push.max-series";
	// the metric and the cluster's settings name the limit by it too.
	Flag string
	// Help is the flag's help text.
	Help string
	// Default is the flag's default.
	Default int
	// Field returns the field of l the limit is.
	Field func(l *Limits) *int
}

// Settings returns every limit, in the order the flags are listed.
func Settings() []Setting {
	return []Setting{
		{
			Flag:    "push.max-series",
			Help:    "Most series (metrics of all families) in one push; more is answered 400. 0: no limit (pushgate only).",
			Default: DefaultMaxSeriesPerPush,
			Field:   func(l *Limits) *int { return &l.MaxSeriesPerPush },
		},
		{
			Flag:    "push.max-labels-per-series",
			Help:    "Most labels of one pushed series, grouping labels and instance included; more is answered 400. 0: no limit (pushgate only).",
			Default: DefaultMaxLabelsPerSeries,
			Field:   func(l *Limits) *int { return &l.MaxLabelsPerSeries },
		},
		{
			Flag:    "push.max-label-name-length",
			Help:    "Longest label name in bytes, in the body or the grouping key; longer is answered 400. 0: no limit (pushgate only).",
			Default: DefaultMaxLabelNameLength,
			Field:   func(l *Limits) *int { return &l.MaxLabelNameLength },
		},
		{
			Flag:    "push.max-label-value-length",
			Help:    "Longest label value (and metric name) in bytes, in the body or the grouping key; longer is answered 400. 0: no limit (pushgate only).",
			Default: DefaultMaxLabelValueLength,
			Field:   func(l *Limits) *int { return &l.MaxLabelValueLength },
		},
		{
			Flag:    "store.max-groups",
			Help:    "Most groups stored; a push that would add one more is answered 507. 0: no limit (pushgate only).",
			Default: DefaultMaxGroups,
			Field:   func(l *Limits) *int { return &l.MaxGroups },
		},
		{
			Flag:    "store.max-series",
			Help:    "Most series stored, push_time_seconds and push_failure_time_seconds included; a push that would add more is answered 507. 0: no limit (pushgate only).",
			Default: DefaultMaxSeries,
			Field:   func(l *Limits) *int { return &l.MaxSeries },
		},
	}
}

// Values returns l's value of every limit, by flag name.
func (l Limits) Values() map[string]int {
	settings := Settings()
	m := make(map[string]int, len(settings))
	for _, s := range settings {
		m[s.Flag] = *s.Field(&l)
	}
	return m
}
