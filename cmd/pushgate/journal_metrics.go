package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pushgate/pushgate/journal"
)

// journalCollector exposes the journal's state as the gateway's own metrics.
type journalCollector struct {
	j                                            *journal.Journal
	fileBytes, liveBytes, syncs, compact, failed *prometheus.Desc
}

func newJournalCollector(j *journal.Journal) *journalCollector {
	return &journalCollector{
		j:         j,
		fileBytes: prometheus.NewDesc("pushgate_journal_file_bytes", "Size of the persistence file.", nil, nil),
		liveBytes: prometheus.NewDesc("pushgate_journal_live_bytes", "Bytes of the persistence file that hold live records.", nil, nil),
		syncs:     prometheus.NewDesc("pushgate_journal_syncs_total", "fsync calls on the persistence file (one per group commit).", nil, nil),
		compact:   prometheus.NewDesc("pushgate_journal_compactions_total", "Compactions of the persistence file.", nil, nil),
		failed:    prometheus.NewDesc("pushgate_journal_failed", "1 when a write to the persistence file failed; changes are refused until a restart.", nil, nil),
	}
}

// Describe sends the descriptors.
func (c *journalCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.fileBytes
	ch <- c.liveBytes
	ch <- c.syncs
	ch <- c.compact
	ch <- c.failed
}

// Collect reads the journal's statistics.
func (c *journalCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.j.Stats()
	failed := 0.0
	if c.j.Err() != nil {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(c.fileBytes, prometheus.GaugeValue, float64(s.FileBytes))
	ch <- prometheus.MustNewConstMetric(c.liveBytes, prometheus.GaugeValue, float64(s.LiveBytes))
	ch <- prometheus.MustNewConstMetric(c.syncs, prometheus.CounterValue, float64(s.SyncCount))
	ch <- prometheus.MustNewConstMetric(c.compact, prometheus.CounterValue, float64(s.Compactions))
	ch <- prometheus.MustNewConstMetric(c.failed, prometheus.GaugeValue, failed)
}
