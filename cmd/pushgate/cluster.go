package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pushgate/pushgate/cluster"
	"github.com/pushgate/pushgate/groupcodec"
	"github.com/pushgate/pushgate/journal/etcdlog"
	"github.com/pushgate/pushgate/store"
	"github.com/pushgate/pushgate/web"
)

// etcdMaxBatchOps is the most group ops the etcd backend takes in one
// batch (etcd's --max-txn-ops default is 128; head takes one).
const etcdMaxBatchOps = 127

// clusterNode is this process as a replica of a cluster on etcd, running.
type clusterNode struct {
	log       *etcdlog.Log
	replica   *cluster.Replica
	advertise string
	endpoints []string
	leaseTTL  time.Duration
	logger    *slog.Logger
	cancel    context.CancelFunc
	done      chan struct{}
}

// openCluster connects to etcd (refusing a cluster whose recorded settings
// differ from this replica's) and returns the replica, not yet running:
// newStore builds each store it loads. Start it with start.
func openCluster(ctx context.Context, c *config, prefix string, newStore func() *store.Store, logger *slog.Logger) (*clusterNode, error) {
	advertise, err := c.cluster.advertise(*c.toolkit.WebListenAddresses, webConfigFile(c))
	if err != nil {
		return nil, err
	}
	tlsConfig, err := c.cluster.tlsConfig()
	if err != nil {
		return nil, err
	}
	password, err := c.cluster.password()
	if err != nil {
		return nil, err
	}
	endpoints := c.cluster.etcdEndpoints()
	log, err := etcdlog.Open(ctx, etcdlog.Config{
		Endpoints:    endpoints,
		Prefix:       c.cluster.prefix,
		TLS:          tlsConfig,
		Username:     c.cluster.username,
		Password:     password,
		LeaseTTL:     c.cluster.leaseTTL,
		AdvertiseURL: advertise,
		Meta:         etcdlog.Meta{Codec: groupcodec.Version, OldestCodec: groupcodec.OldestVersion, Settings: clusterSettings(c, prefix)},
		Logger:       logger,
	})
	if err != nil {
		return nil, err
	}
	replica := cluster.New(cluster.Config{
		Log:          log,
		NewStore:     newStore,
		AdvertiseURL: advertise,
		Logger:       logger,
	})
	return &clusterNode{log: log, replica: replica, advertise: advertise, endpoints: endpoints, leaseTTL: c.cluster.leaseTTL, logger: logger, done: make(chan struct{})}, nil
}

// webConfigFile returns --web.config.file, "" when unset.
func webConfigFile(c *config) string {
	if c.toolkit.WebConfigFile == nil {
		return ""
	}
	return *c.toolkit.WebConfigFile
}

func (n *clusterNode) current() *store.Store           { return n.replica.Store() }
func (n *clusterNode) collector() prometheus.Collector { return newClusterCollector(n) }
func (n *clusterNode) ready() bool                     { return n.replica.Ready() }

// handler forwards the writes this replica does not take to the leader: a
// write waits for a leader up to the election's lease and 2s more, the
// longest a leader's death pauses writes.
func (n *clusterNode) handler(h *web.Handler) http.Handler {
	return h.Forward(n.replica, web.ForwardOptions{Self: n.advertise, LeaderWait: n.leaseTTL + 2*time.Second})
}

// start starts the replica's life (load, follow, campaign) in the
// background. The replica outlives ctx: in-flight writes still need their
// commits applied while the server drains. close stops it.
func (n *clusterNode) start(ctx context.Context) error {
	ctx, n.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer close(n.done)
		_ = n.replica.Run(ctx)
	}()
	n.logger.Info("started as a cluster replica; ready once it holds the cluster's state", "advertise_url", n.advertise)
	return nil
}

// status reports the replica's storage for the status page.
func (n *clusterNode) status() web.StorageStatus {
	rs := n.replica.Status()
	ls := n.log.Stats()
	s := web.ClusterStatus{
		Endpoints: n.endpoints,
		Leading:   rs.Leading,
		Ready:     rs.Ready,
		Applied:   rs.Applied,
		Committed: max(rs.Current, uint64(ls.Committed), uint64(ls.WatchRevision)),
		Rebuilds:  rs.Rebuilds,
		Err:       rs.LastError,
	}
	if ls.LastError != nil && ls.LastErrorTime.After(rs.LastErrorTime) {
		s.Err = ls.LastError
	}
	if rs.Leading {
		s.Leader = n.advertise
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		s.Leader, _ = n.replica.Leader(ctx)
		cancel()
	}
	return s
}

// close stops the replica and closes the log, which hands the leadership
// over at once if this replica held it.
func (n *clusterNode) close() error {
	if n.cancel != nil {
		n.cancel()
		<-n.done
	}
	if err := n.log.Close(); err != nil {
		return fmt.Errorf("leave the cluster: close the etcd log: %w", err)
	}
	return nil
}
