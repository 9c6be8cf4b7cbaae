package main

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/cluster"
	"github.com/pushgate/pushgate/journal/etcdlog"
)

// clusterMetric describes one of a cluster replica's own metrics.
type clusterMetric struct {
	name, help string
	typ        prometheus.ValueType
	value      func(r cluster.Status, l etcdlog.Stats) float64
}

// bit is 1 for true.
func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// clusterMetrics are the metrics clusterCollector exposes, listed once so
// that every store reserves their names, in cluster mode or not
// (clusterFamilies).
var clusterMetrics = []clusterMetric{
	{"pushgate_cluster_ready", "1 when this replica's store holds the cluster's state and its watch is current: only then is it scraped.", prometheus.GaugeValue,
		func(r cluster.Status, _ etcdlog.Stats) float64 { return bit(r.Ready) }},
	{"pushgate_cluster_leader", "1 while this replica is the cluster's leader: the one that commits writes; the others forward theirs to it.", prometheus.GaugeValue,
		func(r cluster.Status, _ etcdlog.Stats) float64 { return bit(r.Leading) }},
	{"pushgate_cluster_applied_position", "The log position (etcd revision) this replica's store applied.", prometheus.GaugeValue,
		func(r cluster.Status, _ etcdlog.Stats) float64 { return float64(r.Applied) }},
	{"pushgate_cluster_committed_position", "The latest log position (etcd revision) this replica knows committed.", prometheus.GaugeValue,
		func(r cluster.Status, l etcdlog.Stats) float64 {
			return float64(max(r.Current, r.Applied, uint64(l.Committed), uint64(l.WatchRevision)))
		}},
	{"pushgate_cluster_store_rebuilds_total", "Stores this replica rebuilt from etcd after a compacted watch or the end of a leader term.", prometheus.CounterValue,
		func(r cluster.Status, _ etcdlog.Stats) float64 { return float64(r.Rebuilds) }},
	{"pushgate_cluster_commits_total", "Transactions this replica committed to etcd as the leader.", prometheus.CounterValue,
		func(_ cluster.Status, l etcdlog.Stats) float64 { return float64(l.Commits) }},
	{"pushgate_cluster_commit_failures_total", "Transactions of this replica's that etcd did not commit, ambiguous ones and NOSPACE included.", prometheus.CounterValue,
		func(_ cluster.Status, l etcdlog.Stats) float64 { return float64(l.Failed) }},
	{"pushgate_cluster_ambiguous_commits_total", "Transactions whose outcome was unknown (a timeout or lost connection): each made this replica rebuild its store.", prometheus.CounterValue,
		func(_ cluster.Status, l etcdlog.Stats) float64 { return float64(l.Ambiguous) }},
	{"pushgate_cluster_nospace_total", "Transactions etcd refused for its NOSPACE alarm: compact, defragment and disarm etcd.", prometheus.CounterValue,
		func(_ cluster.Status, l etcdlog.Stats) float64 { return float64(l.NoSpace) }},
}

// clusterFamilies returns the cluster's metric families without values,
// for the store to reserve their names.
func clusterFamilies() []*dto.MetricFamily {
	out := make([]*dto.MetricFamily, 0, len(clusterMetrics))
	for _, m := range clusterMetrics {
		typ := dto.MetricType_GAUGE
		if m.typ == prometheus.CounterValue {
			typ = dto.MetricType_COUNTER
		}
		out = append(out, &dto.MetricFamily{Name: proto.String(m.name), Help: proto.String(m.help), Type: typ.Enum()})
	}
	return out
}

// clusterCollector exposes a replica's state as the gateway's own metrics.
type clusterCollector struct {
	n     *clusterNode
	descs []*prometheus.Desc
}

func newClusterCollector(n *clusterNode) *clusterCollector {
	c := &clusterCollector{n: n}
	for _, m := range clusterMetrics {
		c.descs = append(c.descs, prometheus.NewDesc(m.name, m.help, nil, nil))
	}
	return c
}

// Describe sends the descriptors.
func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect reads the replica's and the log's state.
func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	r, l := c.n.replica.Status(), c.n.log.Stats()
	for i, m := range clusterMetrics {
		ch <- prometheus.MustNewConstMetric(c.descs[i], m.typ, m.value(r, l))
	}
}
