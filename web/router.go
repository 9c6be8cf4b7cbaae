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
	scrapes := scrape.NewWriter()
	m, err := newMetrics(reg, opts, scrapes)
	if err != nil {
		return nil, err
	}
	ui, err := newUIAssets()
	if err != nil {
		return nil, fmt.Errorf("load web UI: %w", err)
	}
	translate, err := newOTLPTranslate(opts)
	if err != nil {
		return nil, fmt.Errorf("OTLP settings: %w", err)
	}
	h := &Handler{opts: opts, registry: reg, metrics: m, logger: opts.Logger, ui: ui, scrapes: scrapes, ownFamilies: OwnFamilies(), otlpTranslate: translate}
	h.routes = newRouteTable(h)
	return h, nil
}

// ServeHTTP routes a request by the route table (routes.go). Routing is
// matched by hand: the push routes need the still-escaped path (so that %2F
// stays inside a label value), and no route redirects, so a PUT is never
// turned into a GET.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p := h.opts.RoutePrefix; p != "" && r.URL.Path == p {
		http.Redirect(w, r, p+"/", http.StatusMovedPermanently)
		return
	}
	rows, path, ok := h.find(r)
	if !ok {
		http.NotFound(w, r)
		return
	}
	h.serve(w, r, rows, path)
}

// find strips the route prefix from r's path and returns the rows of the
// pattern the rest matches (nil: none) and the path their handler is given;
// ok is false for a path outside the prefix.
func (h *Handler) find(r *http.Request) (rows []route, path string, ok bool) {
	path, escaped := r.URL.Path, r.URL.EscapedPath()
	if p := h.opts.RoutePrefix; p != "" {
		if !underPrefix(path, p) || !underPrefix(escaped, p) {
			return nil, "", false
		}
		path, escaped = path[len(p):], escaped[len(p):]
	}
	rows, path = h.routes.lookup(path, escaped)
	return rows, path, true
}

// underPrefix reports whether path lies under the route prefix p.
func underPrefix(path, p string) bool {
	return strings.HasPrefix(path, p) && strings.HasPrefix(path[len(p):], "/")
}

// serve answers a request whose path matched rows (nil: no route).
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, rows []route, path string) {
	rt := forMethod(rows, r.Method)
	if !h.opts.Ready() {
		// One gate before any route, so that no route can forget it: a
		// store still being loaded is never served, not even in part, and
		// takes no change.
		gate := "other"
		switch {
		case rt != nil:
			gate = rt.loading
		case rows != nil:
			gate = rows[0].loading
		}
		if gate != "" {
			if r.Header.Get(ForwardedByHeader) != "" {
				// Nothing was written: the forwarding replica looks for
				// the leader again (this one may be rebuilding at the
				// start of a term) instead of passing this answer on.
				w.Header().Set(NotLeaderHeader, "")
			}
			h.fail(w, gate, "loading", http.StatusServiceUnavailable, errLoading)
			return
		}
	}
	if rows == nil {
		http.NotFound(w, r)
		return
	}
	if rows[0].api {
		if r.Method == http.MethodOptions {
			h.count("api/v1/options", w, r, func(w http.ResponseWriter) { h.apiOptions(w, r) })
			return
		}
		setAPIHeaders(w)
	}
	if rt == nil {
		// OPTIONS answers 200 with Allow; another method 405 with Allow.
		allow := allowHeader(rows)
		w.Header().Set("Allow", allow)
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusOK)
			return
		}
		h.metrics.reject(rows[0].name, "method")
		http.Error(w, fmt.Sprintf("method %s not allowed; allowed: %s", r.Method, allow), http.StatusMethodNotAllowed)
		return
	}
	if !rt.counted {
		if h.permit(w, r, rt, path) {
			rt.serve(w, r, path)
		}
		return
	}
	h.count(rt.name, w, r, func(w http.ResponseWriter) {
		if h.permit(w, r, rt, path) {
			rt.serve(w, r, path)
		}
	})
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
