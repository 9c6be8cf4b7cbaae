// Command pushgate is a metrics push gateway: a drop-in replacement for the
// Prometheus Pushgateway with the same paths, flags, status codes and
// formats, durable storage, and push and scrape costs that do not grow with
// the store.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
	toolkitweb "github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/pushgate/pushgate/access"
	"github.com/pushgate/pushgate/store"
	"github.com/pushgate/pushgate/web"
)

// shutdownTimeout bounds a graceful stop: in-flight requests get this long
// to finish before the journal is flushed and closed.
const shutdownTimeout = 15 * time.Second

func main() {
	os.Exit(run(os.Args[1:]))
}

// config holds the parsed command line.
type config struct {
	toolkit                 *toolkitweb.FlagConfig
	telemetryPath           string
	externalURL             string
	routePrefix             string
	enableLifecycle         bool
	enableAdminAPI          bool
	enablePprof             bool
	persistenceFile         string
	persistenceInterval     time.Duration
	disableConsistencyCheck bool
	utf8Names               bool
	maxBodyBytes            int64
	limits                  store.Limits
	server                  serverLimits
	permissionsFile         string
	forceEmpty              bool
	log                     *promslog.Config
	app                     *kingpin.Application
	gc                      gcSettings
}

// parseFlags declares the reference Pushgateway's flags, with its names and
// defaults, plus pushgate's own.
func parseFlags(args []string) (*config, error) {
	c := &config{log: &promslog.Config{}}
	app := kingpin.New("pushgate", "A metrics push gateway, compatible with the Prometheus Pushgateway.")
	c.app = app
	app.Version(versionString())
	app.HelpFlag.Short('h')
	c.toolkit = kingpinflag.AddFlags(app, ":9091")
	app.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&c.telemetryPath)
	app.Flag("web.external-url", "The URL under which the Pushgateway is externally reachable.").Default("").StringVar(&c.externalURL)
	app.Flag("web.route-prefix", "Prefix for the internal routes of web endpoints. Defaults to the path of --web.external-url.").Default("").StringVar(&c.routePrefix)
	app.Flag("web.enable-lifecycle", "Enable shutdown via HTTP request.").Default("false").BoolVar(&c.enableLifecycle)
	app.Flag("web.enable-admin-api", "Enable API endpoints for admin control actions.").Default("false").BoolVar(&c.enableAdminAPI)
	app.Flag("web.permissions-file", "Path to a YAML file giving each credential the groups it may push to, and who may read and administer (pushgate only; see the section 'Security' of README.md). Reloaded on SIGHUP and, with --web.enable-lifecycle, on PUT|POST /-/reload. Empty: anyone may push, as with the reference.").Default("").StringVar(&c.permissionsFile)
	app.Flag("web.enable-pprof", "Serve Go runtime profiles under /debug/pprof/ (pushgate only).").Default("false").BoolVar(&c.enablePprof)
	app.Flag("persistence.file", "File to persist metrics. If empty, metrics are only kept in memory. pushgate makes every acknowledged change durable in it; a reference Pushgateway file found there is imported.").Default("").StringVar(&c.persistenceFile)
	app.Flag("persistence.interval", "The minimum interval between compactions of the persistence file.").Default("5m").DurationVar(&c.persistenceInterval)
	app.Flag("persistence.start-empty", "Start with an empty store when the persistence file is corrupt, after moving it aside (pushgate only).").Default("false").BoolVar(&c.forceEmpty)
	app.Flag("push.disable-consistency-check", "Answer pushes with 202 like the reference does in this mode. pushgate still checks every push: its check costs O(push).").Default("false").BoolVar(&c.disableConsistencyCheck)
	app.Flag("push.enable-utf8-names", "Allow UTF-8 characters in metric and label names.").Default("false").BoolVar(&c.utf8Names)
	app.Flag("push.max-body-bytes", "Largest push body accepted, after decompression (pushgate only).").Default("67108864").Int64Var(&c.maxBodyBytes)
	addLimitFlags(app, &c.limits, &c.server)
	addGCFlags(app, &c.gc)
	promslogflag.AddFlags(app, c.log)
	if _, err := app.Parse(args); err != nil {
		return nil, nameFailedFlag(app, args, err)
	}
	if !strings.HasPrefix(c.telemetryPath, "/") {
		// path.Join(prefix, "metrics") would make it look fine, but the
		// router compares the path below the prefix with it, so no
		// request could ever reach the scrape.
		return nil, fmt.Errorf("--web.telemetry-path must start with \"/\", got %q", c.telemetryPath)
	}
	if err := checkLimits(c.maxBodyBytes, c.limits, c.server); err != nil {
		return nil, err
	}
	if c.persistenceInterval <= 0 {
		return nil, fmt.Errorf("--persistence.interval must be positive, got %s", c.persistenceInterval)
	}
	return c, nil
}

// routePrefix computes the effective route prefix: --web.route-prefix, or
// else the path of --web.external-url; "/" means none; the result starts
// with "/" and does not end with one.
func routePrefix(routePrefix, externalURL string) (prefix, externalPath string, err error) {
	if externalURL != "" {
		u, err := url.Parse(externalURL)
		if err != nil {
			return "", "", fmt.Errorf("parse --web.external-url %q: %w", externalURL, err)
		}
		externalPath = strings.TrimRight(u.Path, "/")
	}
	if routePrefix == "" {
		routePrefix = externalPath
	}
	routePrefix = path.Clean("/" + routePrefix)
	if routePrefix == "/" {
		routePrefix = ""
	}
	return routePrefix, externalPath, nil
}

func run(args []string) int {
	c, err := parseFlags(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pushgate:", err)
		return 2
	}
	logger := promslog.New(c.log)
	if err := c.gc.apply(logger); err != nil {
		logger.Error("invalid flags", "err", err)
		return 2
	}
	prefix, externalPath, err := routePrefix(c.routePrefix, c.externalURL)
	if err != nil {
		logger.Error("invalid flags", "err", err)
		return 2
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	st := store.New(store.Options{UTF8Names: c.utf8Names, Logger: logger, Limits: c.limits})
	reg.MustRegister(newStoreCollector(st))
	var permissions *access.PolicyFile
	if c.permissionsFile != "" {
		permissions, err = access.LoadPolicyFile(c.permissionsFile, reg, logger)
		if err != nil {
			logger.Error("cannot load the permission file", "err", err)
			return 1
		}
		stopReloads := reloadOnHangup(permissions)
		defer stopReloads()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	quit := make(chan struct{})
	var quitOnce sync.Once
	var ready atomic.Bool
	var storage *persistence

	handler, err := web.New(st, reg, web.Options{
		RoutePrefix:             prefix,
		ExternalPath:            externalPath,
		TelemetryPath:           c.telemetryPath,
		DisableConsistencyCheck: c.disableConsistencyCheck,
		UTF8Names:               c.utf8Names,
		EnableAdminAPI:          c.enableAdminAPI,
		EnableLifecycle:         c.enableLifecycle,
		EnablePprof:             c.enablePprof,
		Permissions:             permissions,
		MaxBodyBytes:            c.maxBodyBytes,
		Flags:                   flagValues(c.app),
		Build:                   buildInfo(),
		StartTime:               time.Now(),
		Storage: func() web.StorageStatus {
			if storage == nil || !ready.Load() {
				return web.StorageStatus{Path: c.persistenceFile}
			}
			return storage.status()
		},
		Quit:   func() { quitOnce.Do(func() { close(quit) }) },
		Ready:  ready.Load,
		Logger: logger,
	})
	if err != nil {
		logger.Error("setting up the web handler", "err", err)
		return 1
	}
	builtin, err := reg.Gather()
	if err != nil {
		logger.Error("gathering the gateway's own metrics", "err", err)
		return 1
	}
	// Every own name is reserved before the first push, the journal's
	// too, which register only once the journal is open (or never).
	st.Reserve(slices.Concat(builtin, web.OwnFamilies(), journalFamilies()))

	srv := c.server.apply(&http.Server{
		Handler:  handler,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	})
	serveErr := make(chan error, 1)
	go func() { serveErr <- toolkitweb.ListenAndServe(srv, c.toolkit, logger) }()

	if c.persistenceFile != "" {
		storage, err = openPersistence(ctx, c.persistenceFile, c.persistenceInterval, c.forceEmpty, st, reg, logger)
		if err != nil {
			logger.Error("cannot open the persistence file", "err", err)
			_ = srv.Close()
			return 1
		}
	}
	ready.Store(true)
	logger.Info("pushgate ready", "version", pushgateVersion(), "persistence", c.persistenceFile, "groups", st.Stats().Groups)

	code := 0
	select {
	case <-ctx.Done():
		logger.Info("received a termination signal, shutting down")
	case <-quit:
		logger.Info("received a quit request, shutting down")
	case err := <-serveErr:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("HTTP server failed", "err", err)
			code = 1
		}
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		logger.Warn("HTTP server did not stop gracefully", "err", err)
	}
	logger.Info("HTTP server stopped")
	if storage != nil {
		if err := storage.close(); err != nil {
			logger.Error("closing the persistence file", "err", err)
			code = 1
		}
	}
	return code
}

// reloadOnHangup reloads the permission file on every SIGHUP until the
// returned function is called. Only with a permission file is SIGHUP caught:
// without one it keeps Go's default (exit), as with the reference. A failed
// reload is logged by Reload and keeps the previous policy.
func reloadOnHangup(permissions *access.PolicyFile) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				_ = permissions.Reload()
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
	}
}

// flagValues lists every application flag and its value, for
// /api/v1/status, leaving out kingpin's own help and version flags.
func flagValues(app *kingpin.Application) map[string]string {
	out := map[string]string{}
	for _, f := range app.Model().Flags {
		switch f.Name {
		case "help", "help-long", "help-man", "version", "completion-bash", "completion-script-bash", "completion-script-zsh":
			continue
		}
		out[f.Name] = f.String()
	}
	return out
}

// buildInfo describes this binary.
func buildInfo() web.BuildInfo {
	return web.BuildInfo{
		Version:   pushgateVersion(),
		Revision:  version.GetRevision(),
		Branch:    version.Branch,
		BuildUser: version.BuildUser,
		BuildDate: version.BuildDate,
		GoVersion: version.GoVersion,
	}
}

// defaultVersion is reported when the build did not set version.Version
// through -ldflags.
const defaultVersion = "0.1.0-dev"

// pushgateVersion returns the version set at build time, or defaultVersion.
func pushgateVersion() string {
	if version.Version != "" {
		return version.Version
	}
	return defaultVersion
}

// versionString is what --version prints.
func versionString() string {
	return fmt.Sprintf("pushgate, version %s (revision: %s)\n  go version: %s\n  platform: %s/%s",
		pushgateVersion(), version.GetRevision(), version.GoVersion, version.GoOS, version.GoArch)
}
