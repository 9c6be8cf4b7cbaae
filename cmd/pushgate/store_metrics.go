package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pushgate/pushgate/store"
)

// storeCollector exposes the store's counters that the web layer does not
// already count.
type storeCollector struct {
	st                           func() *store.Store
	overridden, applied, skipped *prometheus.Desc
	templated                    *prometheus.Desc
}

// newStoreCollector reads the store st returns (in cluster mode, the one
// served now).
func newStoreCollector(st func() *store.Store) *storeCollector {
	return &storeCollector{
		st: st,
		overridden: prometheus.NewDesc("pushgate_push_overridden_families_total",
			"Pushed push_time_seconds and push_failure_time_seconds families replaced by the gateway's own values, as the reference does.", nil, nil),
		applied: prometheus.NewDesc("pushgate_store_apply_conflicts_total",
			"Stored or committed changes applied although the consistency index refused them (a bug, or a record an older version wrote): restore, load and follow all apply them, so that every store holding one log is equal.", nil, nil),
		skipped: prometheus.NewDesc("pushgate_scrape_skipped_families_total",
			"Families left out of a scrape because they cannot be rendered in its format, so that the scrape stays whole (each scrape that does logs it); pushes refuse such families, so this stays 0 unless something slipped through.", nil, nil),
		templated: prometheus.NewDesc("pushgate_push_same_shape_total",
			"Text pushes stored from the skeleton of the group's last push, with only their values read: a body whose lines, apart from the values, are those of the push that gave the group its families.", nil, nil),
	}
}

// Describe sends the descriptors.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.overridden
	ch <- c.applied
	ch <- c.skipped
	ch <- c.templated
}

// Collect reads the store's counters.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.overridden, prometheus.CounterValue, float64(c.st().OverriddenFamilies()))
	ch <- prometheus.MustNewConstMetric(c.applied, prometheus.CounterValue, float64(c.st().ApplyConflicts()))
	ch <- prometheus.MustNewConstMetric(c.skipped, prometheus.CounterValue, float64(c.st().SkippedFamilies()))
	ch <- prometheus.MustNewConstMetric(c.templated, prometheus.CounterValue, float64(c.st().TemplatePushes()))
}
