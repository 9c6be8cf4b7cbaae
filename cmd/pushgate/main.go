// Command pushgate is a metrics push gateway: a drop-in replacement for the
// Prometheus Pushgateway with the same paths, flags, status codes and
// formats, durable storage, and push and scrape costs that do not grow with
// the store.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
	toolkitweb "github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/pushgate/pushgate/access"
	"github.com/pushgate/pushgate/limits"
	"github.com/pushgate/pushgate/otlp"
	"github.com/pushgate/pushgate/store"
	"github.com/pushgate/pushgate/web"
)

// shutdownTimeout bounds a graceful stop: in-flight requests get this long
// to finish before the journal is flushed and closed.
const shutdownTimeout = 15 * time.Second

func main() {
	os.Exit(run(filepath.Base(os.Args[0]), os.Args[1:], os.Stdout, os.Stderr))
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
	gzipPrecompressCPU      float64
	limits                  limits.Limits
	server                  serverLimits
	permissionsFile         string
	forceEmpty              bool
	exportReference         string
	localAssets             string
	log                     *promslog.Config
	app                     *kingpin.Application
	gc                      gcSettings
	cluster                 clusterFlags
	otlp                    otlpFlags
	// otlpSettings are the --otlp.* flags, validated.
	otlpSettings otlp.Settings
}

// parseCommandLine declares the reference Pushgateway's flags, with its names
// and defaults, plus pushgate's own, and parses args. prog names the program
// in usage and errors; --help and --version print to stdout and end the
// process with 0, as the reference does.
func parseCommandLine(prog string, args []string, stdout, stderr io.Writer) (*config, error) {
	c := &config{log: &promslog.Config{Style: promslog.GoKitStyle, Writer: stderr}}
	app := kingpin.New(prog, "A metrics push gateway, compatible with the Prometheus Pushgateway.")
	app.UsageWriter(stdout).ErrorWriter(stderr)
	c.app = app
	app.Version(version.Print("pushgate"))
	app.HelpFlag.Short('h')
	c.toolkit = kingpinflag.AddFlags(app, ":9091")
	app.Flag("web.local-assets", "Accepted for Debian's /etc/default/prometheus-pushgateway and ignored: pushgate's UI assets are built in.").Default("").StringVar(&c.localAssets)
	app.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&c.telemetryPath)
	app.Flag("web.external-url", "The URL under which the Pushgateway is externally reachable.").Default("").StringVar(&c.externalURL)
	app.Flag("web.route-prefix", "Prefix for the internal routes of web endpoints. Defaults to the path of --web.external-url.").Default("").StringVar(&c.routePrefix)
	app.Flag("web.enable-lifecycle", "Enable shutdown via HTTP request.").Default("false").BoolVar(&c.enableLifecycle)
	app.Flag("web.enable-admin-api", "Enable API endpoints for admin control actions.").Default("false").BoolVar(&c.enableAdminAPI)
	app.Flag("web.permissions-file", "Path to a YAML file giving each credential the groups it may push to, and who may read and administer (pushgate only; see docs/security.md). Reloaded on SIGHUP and, with --web.enable-lifecycle, on PUT|POST /-/reload. Empty: anyone may push, as with the reference.").Default("").StringVar(&c.permissionsFile)
	app.Flag("web.enable-pprof", "Serve Go runtime profiles under /debug/pprof/ (pushgate only).").Default("false").BoolVar(&c.enablePprof)
	app.Flag("persistence.file", "File to persist metrics. If empty, metrics are only kept in memory. pushgate makes every acknowledged change durable in it; a reference Pushgateway file found there is imported.").Default("").StringVar(&c.persistenceFile)
	app.Flag("persistence.interval", "The minimum interval between compactions of the persistence file. Every change is synced to it at once whatever the interval; 0 compacts whenever the file has outgrown the live data, at most once a second.").Default("5m").DurationVar(&c.persistenceInterval)
	app.Flag("persistence.start-empty", "Start with an empty store when the persistence file is corrupt, after moving it aside (pushgate only).").Default("false").BoolVar(&c.forceEmpty)
	app.Flag("persistence.export-reference", "Write the state held in --persistence.file to this path in the reference Pushgateway's format, then exit, for rolling back (pushgate only). Stop the gateway first; the path may be --persistence.file itself.").Default("").StringVar(&c.exportReference)
	app.Flag("push.disable-consistency-check", "Answer pushes with 202 like the reference does in this mode. pushgate still checks every push: its check costs O(push).").Default("false").BoolVar(&c.disableConsistencyCheck)
	app.Flag("push.enable-utf8-names", "Allow UTF-8 characters in metric and label names.").Default("false").BoolVar(&c.utf8Names)
	app.Flag("push.max-body-bytes", "Largest push body accepted, after decompression (pushgate only).").Default("67108864").Int64Var(&c.maxBodyBytes)
	app.Flag("web.gzip-precompress-cpu", "Share of one CPU core (0 to 1) spent between gzip scrapes compressing the bodies the next one will send, so that a gzip scrape after many groups changed finds them compressed; only while gzip scrapes happen, and once the store has settled for half the time between them. 0 disables (pushgate only; see docs/performance.md).").Default("0.25").Float64Var(&c.gzipPrecompressCPU)
	addLimitFlags(app, &c.limits, &c.server)
	addGCFlags(app, &c.gc)
	addClusterFlags(app, &c.cluster)
	addOTLPFlags(app, &c.otlp)
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
	if err := c.cluster.check(c.persistenceFile); err != nil {
		return nil, err
	}
	var err error
	if c.otlpSettings, err = c.otlp.settings(c.utf8Names); err != nil {
		return nil, fmt.Errorf("invalid --otlp.* flags: %w", err)
	}
	if !(c.gzipPrecompressCPU >= 0 && c.gzipPrecompressCPU <= 1) { // NaN too
		return nil, fmt.Errorf("--web.gzip-precompress-cpu must be between 0 and 1, got %g", c.gzipPrecompressCPU)
	}
	if c.persistenceInterval < 0 {
		return nil, fmt.Errorf("--persistence.interval must not be negative, got %s", c.persistenceInterval)
	}
	if c.exportReference != "" && c.persistenceFile == "" {
		return nil, errors.New("--persistence.export-reference needs --persistence.file, the state to export")
	}
	return c, nil
}

// zeroIntervalCompaction is the compaction interval --persistence.interval=0
// stands for. The reference writes its file after every change with 0;
// pushgate syncs every change anyway, and the interval only spaces
// compactions, which run once the file has outgrown the live data. A second
// rather than nothing keeps a failing disk from being retried on every write.
const zeroIntervalCompaction = time.Second

// compactInterval maps --persistence.interval to the journal's minimum time
// between compactions (the journal reads 0 as its own default, 5m).
func compactInterval(flag time.Duration) time.Duration {
	if flag == 0 {
		return zeroIntervalCompaction
	}
	return flag
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

// run is the whole program: it parses args, serves until a signal or a quit
// request, and returns the exit code. prog is the program's name as invoked
// (argv[0]'s base name), used in usage and error messages.
func run(prog string, args []string, stdout, stderr io.Writer) (code int) {
	setDefaultVersion()
	c, err := parseCommandLine(prog, args, stdout, stderr)
	if err != nil {
		return usageError(stderr, prog, err)
	}
	logger := promslog.New(c.log)
	if err := c.gc.apply(logger); err != nil {
		return usageError(stderr, prog, err)
	}
	startGCFloor(uint64(c.gc.minHeap), logger)
	prefix, externalPath, err := routePrefix(c.routePrefix, c.externalURL)
	if err != nil {
		return usageError(stderr, prog, err)
	}
	if c.exportReference != "" {
		return runExport(c, logger)
	}

	// SIGHUP is caught before anything slow happens (loading a large
	// journal), so that a reload sent meanwhile cannot end the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	logger.Info("starting pushgate", "version", version.Info())
	logger.Info("build context", "build_context", version.BuildContext())
	if c.localAssets != "" {
		logger.Info("ignoring --web.local-assets: pushgate's UI assets are built in", "path", c.localAssets)
	}
	if file := *c.toolkit.WebConfigFile; file != "" {
		if err := toolkitweb.Validate(file); err != nil {
			logger.Error("invalid --web.config.file", "file", file, "err", err)
			return 1
		}
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	storeOpts := store.Options{UTF8Names: c.utf8Names, Logger: logger, Limits: c.limits}
	if c.cluster.enabled() {
		storeOpts.MaxBatchOps = etcdMaxBatchOps
	}
	// reserved holds every own metric name, set below before any store
	// built by newStore is served.
	var reserved []*dto.MetricFamily
	newStore := func() *store.Store {
		s := store.New(storeOpts)
		s.Reserve(reserved)
		return s
	}
	backend, err := openStorage(ctx, c, prefix, newStore, logger)
	if err != nil {
		logger.Error("cannot open the storage", "err", err)
		return 1
	}
	defer func() {
		// After the server's shutdown: every acknowledged change is
		// durable once this returns.
		if err := backend.close(); err != nil {
			logger.Error("closing the storage", "err", err)
			code = 1
		}
	}()
	if col := backend.collector(); col != nil {
		if err := reg.Register(col); err != nil {
			logger.Error("registering the storage's metrics", "err", err)
			return 1
		}
	}
	reg.MustRegister(newStoreCollector(backend.current))
	var permissions *access.PolicyFile
	if c.permissionsFile != "" {
		permissions, err = access.LoadPolicyFile(c.permissionsFile, reg, logger)
		if err != nil {
			logger.Error("cannot load the permission file", "err", err)
			return 1
		}
	}
	stopReloads := reloadOnHangup(hup, permissions, logger)
	defer stopReloads()

	quit := make(chan struct{})
	var quitOnce sync.Once

	st := backend.current()
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
		OTLP:                    web.OTLPOptions{Settings: c.otlpSettings},
		Flags:                   flagValues(c.app),
		Build:                   buildInfo(),
		StartTime:               time.Now(),
		Storage:                 backend.status,
		Quit:                    func() { quitOnce.Do(func() { close(quit) }) },
		Ready:                   backend.ready,
		CurrentStore:            backend.current,
		Logger:                  logger,
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
	// and the cluster's too, which register only in their modes.
	reserved = slices.Concat(builtin, web.OwnFamilies(), journalFamilies(), clusterFamilies())
	st.Reserve(reserved)

	srv := c.server.apply(&http.Server{
		Handler:  backend.handler(handler),
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	})
	// The sockets are bound here, before serving starts, so that "ready"
	// below is logged only once connections are accepted, and a port in use
	// stops the start.
	listeners, err := listen(c.toolkit, logger)
	if err != nil {
		logger.Error("cannot listen", "err", err)
		return 1
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- toolkitweb.ServeMultiple(listeners, srv, c.toolkit, logger) }()
	precompressCtx, stopPrecompress := context.WithCancel(ctx)
	defer stopPrecompress()
	go handler.Precompress(precompressCtx, c.gzipPrecompressCPU)

	if err := backend.start(ctx); err != nil {
		logger.Error("cannot load the stored state", "err", err)
		_ = srv.Close()
		return 1
	}

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
	return code
}

// usageError reports a command-line error the way kingpin and the reference
// do ("<prog>: error: <err>, try --help") and returns the exit code, 1.
func usageError(stderr io.Writer, prog string, err error) int {
	fmt.Fprintf(stderr, "%s: error: %v, try --help\n", prog, err)
	return 1
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
