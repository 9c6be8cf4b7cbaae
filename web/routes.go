package web

import (
	"net/http"
	"slices"
	"strings"

	"github.com/pushgate/pushgate/store"
)

// pathMatch says how a route's pattern matches a path under the route
// prefix.
type pathMatch uint8

const (
	// exactPath: the path is the pattern.
	exactPath pathMatch = iota
	// pathPrefix: the path begins with the pattern.
	pathPrefix
	// groupingPath: the escaped path is the pattern ("/metrics/") followed
	// by a grouping path, "job/…" or "job@base64/…". It is matched on the
	// still-escaped path, so that %2F stays inside a label value.
	groupingPath
)

// permission is who may use a route under a permission file (see
// access.go); without the file every route is open.
type permission uint8

const (
	// openToAll: health, readiness, GET /-/quit.
	openToAll permission = iota
	// readers: a credential that may read, when read_requires_auth is set.
	readers
	// pushers: a credential whose push selectors match the group.
	pushers
	// groupPushers: a credential that may push, to the groups the request
	// turns out to write (OTLP: known only once the body is translated).
	// The route authenticates; the handler checks each group
	// (otlpPermit).
	groupPushers
	// admins: an admin credential.
	admins
)

// route is one row of the route table: the methods one handler serves on a
// path pattern, and how the gateway treats them. Routing (ServeHTTP), the
// loading gate and the forwarder all read this table, so that none of them
// classifies a path on its own.
type route struct {
	pattern string
	match   pathMatch
	// suffix, for a groupingPath row, is what the path ends with after
	// the grouping path ("/v1/metrics" for OTLP); the handler is given the
	// grouping path without it.
	suffix string
	// methods are the methods the row serves; nil serves every method
	// (the handler answers).
	methods []string
	// name labels the row's requests in pushgateway_http_requests_total
	// and their refusals in pushgate_rejected_requests_total, as the
	// reference names its handlers.
	name string
	// counted rows count their requests in
	// pushgateway_http_requests_total; the reference counts neither
	// scrapes nor /-/quit.
	counted bool
	// write rows change the store: a cluster replica that does not take
	// writes forwards them to the one that does.
	write bool
	// loading labels the 503 that refuses the row's requests while the
	// stored state loads, from a fixed set (push, delete, metrics, api,
	// other) so that random paths cannot add label values; "" serves them
	// meanwhile.
	loading    string
	permission permission
	// api rows carry the API's CORS and caching headers and answer
	// OPTIONS with them.
	api bool
	// serve answers a request the row admitted. path is the escaped
	// grouping path after "/metrics/" for a groupingPath row, the path
	// under the route prefix otherwise.
	serve func(w http.ResponseWriter, r *http.Request, path string)
}

// routeTable is every route, in matching order: the first pattern that
// matches a path wins, and the rows of one pattern are adjacent.
type routeTable []route

// newRouteTable returns h's routes, as its options enable them.
func newRouteTable(h *Handler) routeTable {
	o := h.opts
	get, getHead := []string{http.MethodGet}, []string{http.MethodGet, http.MethodHead}
	push := func(method store.Method) func(http.ResponseWriter, *http.Request, string) {
		return func(w http.ResponseWriter, r *http.Request, rest string) {
			reserveStack()
			h.push(w, r, rest, method)
		}
	}
	post := []string{http.MethodPost}
	otlpRoute := func(w http.ResponseWriter, r *http.Request, _ string) {
		reserveStack()
		h.otlp(w, r, "")
	}
	otlpGroupRoute := func(w http.ResponseWriter, r *http.Request, rest string) {
		reserveStack()
		h.otlp(w, r, rest)
	}
	t := routeTable{
		{pattern: "/metrics/", match: groupingPath, methods: []string{http.MethodPut}, name: "push", counted: true, write: true, loading: "push", permission: pushers, serve: push(store.Replace)},
		{pattern: "/metrics/", match: groupingPath, methods: []string{http.MethodPost}, name: "push", counted: true, write: true, loading: "push", permission: pushers, serve: push(store.Merge)},
		// Counted as handler="delete", as the reference counts it.
		{pattern: "/metrics/", match: groupingPath, methods: []string{http.MethodDelete}, name: "delete", counted: true, write: true, loading: "delete", permission: pushers, serve: func(w http.ResponseWriter, r *http.Request, rest string) {
			reserveStack()
			h.delete(w, r, rest)
		}},
		// OTLP/HTTP metrics (otlp.go): written like a POST push, group
		// by group.
		{pattern: "/otlp/v1/metrics", methods: post, name: otlpHandler, counted: true, write: true, loading: "push", permission: groupPushers, serve: otlpRoute},
		{pattern: "/otlp/", match: groupingPath, suffix: "/v1/metrics", methods: post, name: otlpHandler, counted: true, write: true, loading: "push", permission: groupPushers, serve: otlpGroupRoute},
		{pattern: "/api/v1/otlp/v1/metrics", methods: post, name: otlpHandler, counted: true, write: true, loading: "push", permission: groupPushers, serve: otlpRoute},
		{pattern: o.TelemetryPath, methods: getHead, name: "metrics", loading: "metrics", permission: readers, serve: plain(h.scrape)},
		{pattern: "/-/healthy", methods: getHead, name: "healthy", counted: true, serve: plain(h.healthy)},
		{pattern: "/-/ready", methods: getHead, name: "ready", counted: true, serve: plain(h.ready)},
		{pattern: "/-/quit", methods: []string{http.MethodPut, http.MethodPost}, name: "quit", loading: "other", permission: admins, serve: plain(h.quit)},
		{pattern: "/-/quit", methods: get, name: "quit", loading: "other", serve: plain(h.quitGet)},
	}
	if o.EnableLifecycle {
		t = append(t, route{pattern: "/-/reload", methods: []string{http.MethodPut, http.MethodPost}, name: "reload", counted: true, loading: "other", permission: admins, serve: plain(h.reload)})
	}
	t = append(t,
		route{pattern: "/api/v1/status", methods: get, name: "api/v1/status", counted: true, loading: "api", permission: readers, api: true, serve: plain(h.apiStatus)},
		route{pattern: "/api/v1/metrics", methods: get, name: "api/v1/metrics", counted: true, loading: "api", permission: readers, api: true, serve: plain(h.apiMetrics)},
	)
	if o.EnableAdminAPI {
		t = append(t,
			route{pattern: "/api/v1/admin/wipe", methods: []string{http.MethodPut}, name: "wipe", counted: true, write: true, loading: "api", permission: admins, api: true, serve: plain(h.apiWipe)},
			route{pattern: "/api/v1/admin/groups", methods: get, name: "api/v1/admin/groups", counted: true, loading: "api", permission: admins, api: true, serve: plain(h.apiAdminGroups)},
			route{pattern: "/api/v1/admin/groups", methods: []string{http.MethodDelete}, name: "api/v1/admin/groups", counted: true, write: true, loading: "api", permission: admins, api: true, serve: plain(h.apiAdminGroups)},
		)
	}
	t = append(t,
		// Any other API path, or a disabled one: 404, and "api" while
		// loading.
		route{pattern: "/api/v1/", match: pathPrefix, name: "api", loading: "api", serve: notFound},
		route{pattern: "/", methods: get, name: "status", counted: true, loading: "other", permission: readers, serve: plain(h.uiIndex)},
		route{pattern: "/group", methods: get, name: "status", counted: true, loading: "other", permission: readers, serve: plain(h.uiGroup)},
		route{pattern: "/status", methods: get, name: "status", counted: true, loading: "other", permission: readers, serve: plain(h.uiStatus)},
		route{pattern: "/static/", match: pathPrefix, methods: get, name: "static", counted: true, loading: "other", permission: readers, serve: plain(h.uiStatic)},
	)
	if o.EnablePprof {
		t = append(t, route{pattern: "/debug/pprof/", match: pathPrefix, name: "pprof", loading: "other", permission: admins, serve: h.pprof})
	}
	return t
}

// plain adapts a handler that needs no path to a route's serve.
func plain(fn http.HandlerFunc) func(http.ResponseWriter, *http.Request, string) {
	return func(w http.ResponseWriter, r *http.Request, _ string) { fn(w, r) }
}

// notFound answers 404.
func notFound(w http.ResponseWriter, r *http.Request, _ string) { http.NotFound(w, r) }

// lookup returns the rows of the first pattern matching a path under the
// prefix (path, and escaped, its escaped form), nil when none does, and
// the path their handler is given.
func (t routeTable) lookup(path, escaped string) (rows []route, arg string) {
	for i := range t {
		arg, ok := t[i].matches(path, escaped)
		if !ok {
			continue
		}
		j := i + 1
		for j < len(t) && t[j].pattern == t[i].pattern && t[j].match == t[i].match {
			j++
		}
		return t[i:j], arg
	}
	return nil, path
}

// matches reports whether the row's pattern matches the path, and returns
// the path its handler is given.
func (rt *route) matches(path, escaped string) (string, bool) {
	switch rt.match {
	case groupingPath:
		rest, ok := strings.CutPrefix(escaped, rt.pattern)
		if ok && rt.suffix != "" {
			rest, ok = strings.CutSuffix(rest, rt.suffix)
		}
		if ok && (strings.HasPrefix(rest, "job/") || strings.HasPrefix(rest, "job@base64/")) {
			return rest, true
		}
		return "", false
	case pathPrefix:
		return path, strings.HasPrefix(path, rt.pattern)
	default:
		return path, path == rt.pattern
	}
}

// forMethod returns the row of rows (one pattern's) that serves method, or
// nil.
func forMethod(rows []route, method string) *route {
	for i := range rows {
		if rows[i].methods == nil || slices.Contains(rows[i].methods, method) {
			return &rows[i]
		}
	}
	return nil
}

// allowHeader lists the methods one pattern's rows serve, in a stable order,
// OPTIONS included.
func allowHeader(rows []route) string {
	var out []string
	for _, m := range []string{http.MethodDelete, http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut} {
		if forMethod(rows, m) != nil {
			out = append(out, m)
		}
	}
	out = append(out, http.MethodOptions)
	return strings.Join(out, ", ")
}
