package main

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pushgate/pushgate/store"
	"github.com/pushgate/pushgate/web"
)

// storage is where the store's changes are made durable: nowhere (memory),
// the file journal (--persistence.file), or a cluster on etcd
// (--cluster.etcd.endpoints). run asks it, not the flags, how to serve.
type storage interface {
	// current returns the store requests read and change now (a cluster
	// replica swaps in the stores it rebuilds).
	current() *store.Store
	// collector exposes the backend's own metrics; nil: none.
	collector() prometheus.Collector
	// handler returns what serves HTTP in front of h: h itself, or the
	// forwarder of writes to the cluster's leader.
	handler(h *web.Handler) http.Handler
	// start loads the stored state (file) or starts the replica's life
	// (etcd). It is called once the server listens, so that health and
	// readiness are answered meanwhile.
	start(ctx context.Context) error
	// ready reports whether the stored state is loaded: until then every
	// request but health and readiness is refused.
	ready() bool
	// status is the backend's state for the status page; nil: memory.
	status() web.StorageStatus
	// close makes every change durable and releases the backend.
	close() error
}

// openStorage returns the backend the flags ask for, not yet started:
// newStore builds each store it serves.
func openStorage(ctx context.Context, c *config, prefix string, newStore func() *store.Store, logger *slog.Logger) (storage, error) {
	switch {
	case c.cluster.enabled():
		return openCluster(ctx, c, prefix, newStore, logger)
	case c.persistenceFile != "":
		return newPersistence(c.persistenceFile, compactInterval(c.persistenceInterval), c.forceEmpty, newStore(), logger), nil
	default:
		return &memory{st: newStore(), logger: logger}, nil
	}
}

// memory keeps the store in memory only: a restart loses every group.
type memory struct {
	st     *store.Store
	logger *slog.Logger
	loaded atomic.Bool
}

func (m *memory) current() *store.Store               { return m.st }
func (m *memory) collector() prometheus.Collector     { return nil }
func (m *memory) handler(h *web.Handler) http.Handler { return h }
func (m *memory) ready() bool                         { return m.loaded.Load() }
func (m *memory) status() web.StorageStatus           { return nil }
func (m *memory) close() error                        { return nil }
func (m *memory) start(ctx context.Context) error {
	m.loaded.Store(true)
	m.logger.Info("ready", "persistence", "", "groups", m.st.Stats().Groups)
	return nil
}
