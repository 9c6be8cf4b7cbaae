// Package web serves pushgate's HTTP interface: the push API, the OTLP/HTTP
// metrics ingest (otlp.go), the scrape endpoint, the JSON API v1, the
// lifecycle endpoints and the web UI. It turns store and decoding errors
// into status codes and one-line reasons in one place (errors.go; OTLP's
// google.rpc.Status answers in otlp.go) and counts every request in the
// gateway's own metrics.
package web

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/pushgate/pushgate/access"
	"github.com/pushgate/pushgate/otlp"
	"github.com/pushgate/pushgate/scrape"
	"github.com/pushgate/pushgate/store"
)

// BuildInfo describes the running binary, for /api/v1/status and the UI.
type BuildInfo struct {
	Version, Revision, Branch, BuildUser, BuildDate, GoVersion string
	// Tags are the build tags, for pushgateway_build_info's tags label.
	Tags string
}

// Options configures a Handler. Field names follow the command-line flags.
type Options struct {
	// RoutePrefix is the path every route lives under ("" or "/x", never
	// ending in "/").
	RoutePrefix string
	// ExternalPath is the path of --web.external-url, used for links in the
	// UI ("" when unset).
	ExternalPath string
	// TelemetryPath is the scrape path below the prefix (default /metrics).
	TelemetryPath string
	// DisableConsistencyCheck makes successful pushes answer 202 instead of
	// 200, as the reference does with --push.disable-consistency-check. The
	// checks themselves still run: they cost O(push) here.
	DisableConsistencyCheck bool
	// UTF8Names allows UTF-8 metric and label names in bodies and paths.
	UTF8Names bool
	// EnableAdminAPI enables PUT /api/v1/admin/wipe and the UI's delete-all.
	EnableAdminAPI bool
	// EnableLifecycle enables PUT|POST /-/quit.
	EnableLifecycle bool
	// Permissions, when set, restricts pushing, reading and the admin
	// endpoints to the credentials of the permission file (see access.go);
	// nil leaves everything open, as the reference does.
	Permissions *access.PolicyFile
	// EnablePprof serves /debug/pprof/ (off by default).
	EnablePprof bool
	// MaxBodyBytes limits a push body after decompression (0: no limit).
	MaxBodyBytes int64
	// OTLP configures the OTLP/HTTP metrics endpoints.
	OTLP OTLPOptions
	// Flags lists every application flag and its value for /api/v1/status.
	Flags map[string]string
	// Build describes the binary.
	Build BuildInfo
	// StartTime is when the process started.
	StartTime time.Time
	// Storage reports the storage backend's state for the UI's status
	// page; nil, or a nil answer, when memory-only.
	Storage func() StorageStatus
	// Quit is called by /-/quit (when enabled) to begin a graceful shutdown.
	Quit func()
	// Ready reports whether the store has been loaded.
	Ready func() bool
	// CurrentStore, when set, returns the store a request reads and
	// changes, so that a cluster replica can swap in a store it rebuilt
	// (see package cluster); nil serves the store given to New. Every
	// store it returns must have been built with the same options.
	CurrentStore func() *store.Store
	// Logger receives request logs; nil discards.
	Logger *slog.Logger
}

// StorageStatus is the state of the storage backend shown on the status
// page: a JournalStatus or a ClusterStatus.
type StorageStatus interface {
	storageStatus()
}

// JournalStatus is the state of the file journal (--persistence.file).
type JournalStatus struct {
	Path           string
	FileBytes      int64
	LiveBytes      int64
	LastCompaction time.Time
	Compactions    uint64
	Syncs          uint64
	// Err is the journal's last error (nil: none).
	Err error
}

// ClusterStatus is the state of a cluster replica: its etcd endpoints, the
// leader's URL, whether this replica leads, whether its store is current,
// the log positions its store applied and the log committed (as last
// read), and how many times it rebuilt its store.
type ClusterStatus struct {
	Endpoints          []string
	Leader             string
	Leading, Ready     bool
	Applied, Committed uint64
	Rebuilds           uint64
	// Err is the replica's or the log's last error (nil: none).
	Err error
}

func (JournalStatus) storageStatus() {}
func (ClusterStatus) storageStatus() {}

// Handler is pushgate's HTTP handler.
type Handler struct {
	opts     Options
	registry *prometheus.Registry
	metrics  *metrics
	logger   *slog.Logger
	ui       *uiAssets
	gzip     gzipWriters
	// scrapes writes the scrapes of every store this handler serves, with
	// the buffers and flate writers they reuse.
	scrapes *scrape.Writer
	// ownFamilies are OwnFamilies(), sample-less, added to each scrape's
	// gather where missing (see withEmptyOwnFamilies).
	ownFamilies []*dto.MetricFamily
	rejects     rejectLog
	// routes is the route table (routes.go), built from opts.
	routes routeTable
	// otlpTranslate translates OTLP requests (Options.OTLP).
	otlpTranslate func(pmetric.Metrics, map[string]string, time.Time) ([]otlp.Group, error)
}

// store returns the store this request works on (Options.CurrentStore).
func (h *Handler) store() *store.Store { return h.opts.CurrentStore() }
