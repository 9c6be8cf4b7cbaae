package web

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pushgate/pushgate/scrape"
	"github.com/pushgate/pushgate/store"
)

// New returns the handler serving every route of the gateway. reg is the
// gateway's own registry: the handler registers its metrics there and serves
// it beside the pushed metrics.
func New(st *store.Store, reg *prometheus.Registry, opts Options) (*Handler, error) {
	if opts.TelemetryPath == "" {
		opts.TelemetryPath = "/metrics"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Ready == nil {
		opts.Ready = func() bool { return true }
	}
	if opts.CurrentStore == nil {
		opts.CurrentStore = func() *store.Store { return st }
	}
	m, err := newMetrics(reg, opts)
	if err != nil {
		return nil, err
	}
	ui, err := newUIAssets()
	if err != nil {
		return nil, fmt.Errorf("load web UI: %w", err)
	}
	h := &Handler{opts: opts, registry: reg, metrics: m, logger: opts.Logger, ui: ui, scrapes: scrape.NewWriter(), ownFamilies: OwnFamilies()}
	return h, nil
}

// ServeHTTP routes a request. Routing is a fixed table matched by hand: the
// push routes need the still-escaped path (so that %2F stays inside a label
// value), and no route redirects, so a PUT is never turned into a GET.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	escaped := r.URL.EscapedPath()
	if p := h.opts.RoutePrefix; p != "" {
		if path == p {
			http.Redirect(w, r, p+"/", http.StatusMovedPermanently)
			return
		}
		if !strings.HasPrefix(path, p+"/") || !strings.HasPrefix(escaped, p+"/") {
			http.NotFound(w, r)
			return
		}
		path = path[len(p):]
		escaped = escaped[len(p):]
	}
	if !h.opts.Ready() && path != "/-/healthy" && path != "/-/ready" {
		// One gate before any route, so that no route can forget it: a
		// store still being loaded is never served, not even in part, and
		// takes no change.
		h.fail(w, loadingHandler(path, escaped, r.Method, h.opts.TelemetryPath), "loading", http.StatusServiceUnavailable, errLoading)
		return
	}

	if rest, ok := cutPushPath(escaped); ok {
		reserveStack()
		h.routePush(w, r, rest)
		return
	}
	switch {
	case path == h.opts.TelemetryPath:
		scrape := h.requireRead("", h.scrape)
		h.route(w, r, "", map[string]http.HandlerFunc{http.MethodGet: scrape, http.MethodHead: scrape})
	case path == "/-/healthy":
		h.route(w, r, "healthy", map[string]http.HandlerFunc{http.MethodGet: h.healthy, http.MethodHead: h.healthy})
	case path == "/-/ready":
		h.route(w, r, "ready", map[string]http.HandlerFunc{http.MethodGet: h.ready, http.MethodHead: h.ready})
	case path == "/-/quit":
		quit := h.requireAdmin("quit", h.quit)
		h.route(w, r, "", map[string]http.HandlerFunc{http.MethodPut: quit, http.MethodPost: quit, http.MethodGet: h.quitGet})
	case path == "/-/reload" && h.opts.EnableLifecycle:
		reload := h.requireAdmin("reload", h.reload)
		h.route(w, r, "reload", map[string]http.HandlerFunc{http.MethodPut: reload, http.MethodPost: reload})
	case strings.HasPrefix(path, "/api/v1/"):
		h.routeAPI(w, r, path)
	case path == "/":
		h.route(w, r, "status", map[string]http.HandlerFunc{http.MethodGet: h.requireRead("status", h.uiIndex)})
	case path == "/group":
		h.route(w, r, "status", map[string]http.HandlerFunc{http.MethodGet: h.requireRead("status", h.uiGroup)})
	case path == "/status":
		h.route(w, r, "status", map[string]http.HandlerFunc{http.MethodGet: h.requireRead("status", h.uiStatus)})
	case strings.HasPrefix(path, "/static/"):
		h.route(w, r, "static", map[string]http.HandlerFunc{http.MethodGet: h.requireRead("static", h.uiStatic)})
	case h.opts.EnablePprof && strings.HasPrefix(path, "/debug/pprof/"):
		h.requireAdmin("pprof", func(w http.ResponseWriter, r *http.Request) { h.pprof(w, r, path) })(w, r)
	default:
		http.NotFound(w, r)
	}
}

// routePush routes a request for a grouping path (rest, still escaped),
// building only the handler its method needs: building all three, with
// their permission closures, was 9 of a push's allocations.
func (h *Handler) routePush(w http.ResponseWriter, r *http.Request, rest string) {
	var fn http.HandlerFunc
	name := "push"
	switch r.Method {
	case http.MethodPut:
		fn = h.requirePush("push", rest, func(w http.ResponseWriter, r *http.Request) { h.push(w, r, rest, store.Replace) })
	case http.MethodPost:
		fn = h.requirePush("push", rest, func(w http.ResponseWriter, r *http.Request) { h.push(w, r, rest, store.Merge) })
	case http.MethodDelete:
		// Counted as handler="delete", as the reference counts it.
		name = "delete"
		fn = h.requirePush("delete", rest, func(w http.ResponseWriter, r *http.Request) { h.delete(w, r, rest) })
	default:
		// Not a push method: route answers 405 (or OPTIONS) with the
		// methods that are.
		h.route(w, r, "push", map[string]http.HandlerFunc{http.MethodPut: nil, http.MethodPost: nil, http.MethodDelete: nil})
		return
	}
	h.route(w, r, name, map[string]http.HandlerFunc{r.Method: fn})
}

// routeAPI routes /api/v1/*; every API response carries the CORS headers.
func (h *Handler) routeAPI(w http.ResponseWriter, r *http.Request, path string) {
	var methods map[string]http.HandlerFunc
	name := strings.TrimPrefix(path, "/")
	switch path {
	case "/api/v1/status":
		methods = map[string]http.HandlerFunc{http.MethodGet: h.requireRead(name, h.apiStatus)}
	case "/api/v1/metrics":
		methods = map[string]http.HandlerFunc{http.MethodGet: h.requireRead(name, h.apiMetrics)}
	case "/api/v1/admin/wipe":
		if !h.opts.EnableAdminAPI {
			http.NotFound(w, r)
			return
		}
		name = "wipe"
		methods = map[string]http.HandlerFunc{http.MethodPut: h.requireAdmin(name, h.apiWipe)}
	case "/api/v1/admin/groups":
		if !h.opts.EnableAdminAPI {
			http.NotFound(w, r)
			return
		}
		name = "api/v1/admin/groups"
		adminGroups := h.requireAdmin(name, h.apiAdminGroups)
		methods = map[string]http.HandlerFunc{http.MethodGet: adminGroups, http.MethodDelete: adminGroups}
	default:
		http.NotFound(w, r)
		return
	}
	if r.Method == http.MethodOptions {
		h.instrument("api/v1/options", h.apiOptions)(w, r)
		return
	}
	setAPIHeaders(w)
	h.route(w, r, name, methods)
}

// route dispatches on the method. OPTIONS answers 200 with Allow; an unknown
// method answers 405 with Allow. name labels the request in the gateway's own
// metrics ("" leaves it uncounted, as the reference does for scrapes).
func (h *Handler) route(w http.ResponseWriter, r *http.Request, name string, methods map[string]http.HandlerFunc) {
	fn, ok := methods[r.Method]
	if !ok {
		allow := allowHeader(methods)
		w.Header().Set("Allow", allow)
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusOK)
			return
		}
		h.metrics.reject(name, "method")
		http.Error(w, fmt.Sprintf("method %s not allowed; allowed: %s", r.Method, allow), http.StatusMethodNotAllowed)
		return
	}
	if name == "" {
		fn(w, r)
		return
	}
	h.instrument(name, fn)(w, r)
}

// loadingHandler names the handler a request refused while loading is
// counted under in pushgate_rejected_requests_total, from a fixed set so that
// random paths cannot add label values.
func loadingHandler(path, escaped, method, telemetryPath string) string {
	switch _, push := cutPushPath(escaped); {
	case push && method == http.MethodDelete:
		return "delete"
	case push:
		return "push"
	case path == telemetryPath:
		return "metrics"
	case strings.HasPrefix(path, "/api/v1/"):
		return "api"
	default:
		return "other"
	}
}

// allowHeader lists the methods in a stable order, OPTIONS included.
func allowHeader(methods map[string]http.HandlerFunc) string {
	var out []string
	for _, m := range []string{http.MethodDelete, http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut} {
		if _, ok := methods[m]; ok {
			out = append(out, m)
		}
	}
	out = append(out, http.MethodOptions)
	return strings.Join(out, ", ")
}

// cutPushPath returns the grouping part of a push path ("job/…" after
// "/metrics/"), in its escaped form.
func cutPushPath(escaped string) (string, bool) {
	rest, ok := strings.CutPrefix(escaped, "/metrics/")
	if !ok {
		return "", false
	}
	if strings.HasPrefix(rest, "job/") || strings.HasPrefix(rest, "job@base64/") {
		return rest, true
	}
	return "", false
}

// pprof serves the runtime profiles when --web.enable-pprof is set.
func (h *Handler) pprof(w http.ResponseWriter, r *http.Request, path string) {
	switch strings.TrimPrefix(path, "/debug/pprof/") {
	case "cmdline":
		pprof.Cmdline(w, r)
	case "profile":
		pprof.Profile(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "trace":
		pprof.Trace(w, r)
	default:
		r2 := r.Clone(r.Context())
		r2.URL.Path = path
		pprof.Index(w, r2)
	}
}
