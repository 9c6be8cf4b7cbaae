package access

import (
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// PolicyFile is the permission file named by --web.permissions-file: the
// policy currently in force, and the means to reload it.
type PolicyFile struct {
	path    string
	logger  *slog.Logger
	cache   *verifiedCache
	current atomic.Pointer[Policy]

	// reloadMu serializes reloads so that the metrics and the policy
	// always describe the same attempt.
	reloadMu      sync.Mutex
	reloadSuccess prometheus.Gauge
	lastSuccess   prometheus.Gauge
}

// LoadPolicyFile reads and checks the permission file at path. Unlike a
// reload, a bad file here is an error: the gateway must not start open when
// it was asked to restrict access. The reload metrics are registered in reg
// (when not nil), named like Prometheus' own config reload metrics.
func LoadPolicyFile(path string, reg prometheus.Registerer, logger *slog.Logger) (*PolicyFile, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f := &PolicyFile{
		path:   path,
		logger: logger,
		cache:  newVerifiedCache(defaultCacheEntries),
		reloadSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pushgate_permissions_reload_success",
			Help: "Whether the last reload of the permission file succeeded (1) or failed and the previous policy is still in force (0).",
		}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pushgate_permissions_last_reload_success_timestamp_seconds",
			Help: "Time of the last successful load of the permission file, in seconds since the epoch.",
		}),
	}
	p, err := f.read()
	if err != nil {
		return nil, err
	}
	f.current.Store(p)
	f.reloadSuccess.Set(1)
	f.lastSuccess.Set(float64(time.Now().UnixNano()) / 1e9)
	if reg != nil {
		for _, c := range []prometheus.Collector{f.reloadSuccess, f.lastSuccess} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register permission file metrics: %w", err)
			}
		}
	}
	logger.Info("permission file loaded", "file", path, "credentials", p.credentialCount(), "read_requires_auth", p.readRequiresAuth)
	return f, nil
}

// Path returns the file's path.
func (f *PolicyFile) Path() string { return f.path }

// Policy returns the policy in force. A request should call it once and
// decide with that policy, so that a reload cannot change the rules halfway.
func (f *PolicyFile) Policy() *Policy { return f.current.Load() }

// Reload reads the file again and puts it in force if it is valid. A bad
// file keeps the previous policy; the error says why and is logged.
// Requests in flight are not disturbed: they hold the policy they loaded.
func (f *PolicyFile) Reload() error {
	f.reloadMu.Lock()
	defer f.reloadMu.Unlock()
	p, err := f.read()
	if err != nil {
		f.reloadSuccess.Set(0)
		f.logger.Error("permission file reload failed; the previous policy stays in force", "file", f.path, "err", err)
		return err
	}
	f.current.Store(p)
	f.reloadSuccess.Set(1)
	f.lastSuccess.Set(float64(time.Now().UnixNano()) / 1e9)
	f.logger.Info("permission file reloaded", "file", f.path, "credentials", p.credentialCount(), "read_requires_auth", p.readRequiresAuth)
	return nil
}

// read parses the file with the shared verification cache.
func (f *PolicyFile) read() (*Policy, error) {
	data, err := os.ReadFile(f.path)
	if err != nil {
		return nil, fmt.Errorf("read permission file: %w", err)
	}
	p, err := parse(data, f.cache)
	if err != nil {
		return nil, fmt.Errorf("permission file %s: %w", f.path, err)
	}
	return p, nil
}
