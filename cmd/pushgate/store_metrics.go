package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pushgate/pushgate/store"
)

// newStoreCollector exposes the store's counters that the web layer does
// not already count.
func newStoreCollector(st *store.Store) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "pushgate_push_overridden_families_total",
		Help: "Pushed push_time_seconds and push_failure_time_seconds families replaced by the gateway's own values, as the reference does.",
	}, func() float64 { return float64(st.OverriddenFamilies()) })
}
