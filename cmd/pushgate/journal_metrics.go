package main

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/journal/filejournal"
)

// journalMetric describes one of the journal's own metrics.
type journalMetric struct {
	name, help string
	typ        prometheus.ValueType
	value      func(s filejournal.Stats, failed bool) float64
}

// journalMetrics are the metrics journalCollector exposes. They are listed
// here once so that the store can reserve their names at start, before the
// journal is opened and whether or not it ever is (journalFamilies).
var journalMetrics = []journalMetric{
	{"pushgate_journal_file_bytes", "Size of the persistence file.", prometheus.GaugeValue,
		func(s filejournal.Stats, _ bool) float64 { return float64(s.FileBytes) }},
	{"pushgate_journal_live_bytes", "Bytes of the persistence file that hold live records.", prometheus.GaugeValue,
		func(s filejournal.Stats, _ bool) float64 { return float64(s.LiveBytes) }},
	{"pushgate_journal_syncs_total", "fsync calls on the persistence file (one per group commit).", prometheus.CounterValue,
		func(s filejournal.Stats, _ bool) float64 { return float64(s.SyncCount) }},
	{"pushgate_journal_compactions_total", "Compactions of the persistence file.", prometheus.CounterValue,
		func(s filejournal.Stats, _ bool) float64 { return float64(s.Compactions) }},
	{"pushgate_journal_failed", "1 when a write to the persistence file failed; changes are refused until a restart.", prometheus.GaugeValue,
		func(_ filejournal.Stats, failed bool) float64 {
			if failed {
				return 1
			}
			return 0
		}},
}

// journalFamilies returns the journal's metric families without values,
// for the store to reserve their names.
func journalFamilies() []*dto.MetricFamily {
	out := make([]*dto.MetricFamily, 0, len(journalMetrics))
	for _, m := range journalMetrics {
		typ := dto.MetricType_GAUGE
		if m.typ == prometheus.CounterValue {
			typ = dto.MetricType_COUNTER
		}
		out = append(out, &dto.MetricFamily{Name: proto.String(m.name), Help: proto.String(m.help), Type: typ.Enum()})
	}
	return out
}

// journalCollector exposes the journal's state as the gateway's own metrics,
// once it is loaded.
type journalCollector struct {
	p     *persistence
	descs []*prometheus.Desc
}

func newJournalCollector(p *persistence) *journalCollector {
	c := &journalCollector{p: p}
	for _, m := range journalMetrics {
		c.descs = append(c.descs, prometheus.NewDesc(m.name, m.help, nil, nil))
	}
	return c
}

// Describe sends the descriptors.
func (c *journalCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect reads the journal's statistics; nothing while it loads.
func (c *journalCollector) Collect(ch chan<- prometheus.Metric) {
	j := c.p.j.Load()
	if j == nil {
		return
	}
	s := j.Stats()
	failed := j.Err() != nil
	for i, m := range journalMetrics {
		ch <- prometheus.MustNewConstMetric(c.descs[i], m.typ, m.value(s, failed))
	}
}
