package web

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestRouteTableServesEachMethodOfAPatternOnce pins what lookup relies on:
// the rows of one pattern are adjacent (a later run of the same pattern
// would never be reached), and no method is served by two of its rows.
func TestRouteTableServesEachMethodOfAPatternOnce(t *testing.T) {
	h, _ := newTestHandler(t, Options{EnableAdminAPI: true, EnableLifecycle: true, EnablePprof: true})
	seen := map[string]bool{}
	for i, j := 0, 0; i < len(h.routes); i = j {
		for j = i + 1; j < len(h.routes) && h.routes[j].pattern == h.routes[i].pattern; j++ {
		}
		key := h.routes[i].pattern
		if seen[key] {
			t.Errorf("pattern %q has rows apart", key)
		}
		seen[key] = true
		methods := map[string]bool{}
		for _, rt := range h.routes[i:j] {
			for _, m := range rt.methods {
				if methods[m] {
					t.Errorf("pattern %q serves %s twice", key, m)
				}
				methods[m] = true
			}
			if rt.write && (!rt.counted || rt.loading == "") {
				t.Errorf("write route %q %v is uncounted or served while loading", key, rt.methods)
			}
		}
	}
}

// TestWriteHandlerNamesTheRequestsThatChangeTheStore pins what the
// forwarder sends to the cluster's leader.
func TestWriteHandlerNamesTheRequestsThatChangeTheStore(t *testing.T) {
	for _, c := range []struct {
		name           string
		opts           Options
		method, target string
		want           string
	}{
		{"a PUT push is a push", Options{}, http.MethodPut, "/metrics/job/j", "push"},
		{"a POST push is a push", Options{}, http.MethodPost, "/metrics/job/j/a%2Fb/c", "push"},
		{"a base64 job is a push", Options{}, http.MethodPut, "/metrics/job@base64/ag", "push"},
		{"a DELETE of a group is a delete", Options{}, http.MethodDelete, "/metrics/job/j", "delete"},
		{"a GET of a grouping path changes nothing", Options{}, http.MethodGet, "/metrics/job/j", ""},
		{"a scrape changes nothing", Options{}, http.MethodGet, "/metrics", ""},
		{"a wipe is a write with the admin API", Options{EnableAdminAPI: true}, http.MethodPut, "/api/v1/admin/wipe", "wipe"},
		{"a wipe is no route without the admin API", Options{}, http.MethodPut, "/api/v1/admin/wipe", ""},
		{"a bulk delete is a write", Options{EnableAdminAPI: true}, http.MethodDelete, "/api/v1/admin/groups", "api/v1/admin/groups"},
		{"listing groups changes nothing", Options{EnableAdminAPI: true}, http.MethodGet, "/api/v1/admin/groups", ""},
		{"a push under the prefix is a push", Options{RoutePrefix: "/p"}, http.MethodPut, "/p/metrics/job/j", "push"},
		{"a push outside the prefix is no route", Options{RoutePrefix: "/p"}, http.MethodPut, "/metrics/job/j", ""},
		{"a push beside the prefix is no route", Options{RoutePrefix: "/p"}, http.MethodPut, "/pmetrics/job/j", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, _ := newTestHandler(t, c.opts)
			if got := h.writeHandler(httptest.NewRequest(c.method, c.target, nil)); got != c.want {
				t.Errorf("writeHandler(%s %s) = %q, want %q", c.method, c.target, got, c.want)
			}
		})
	}
}

// TestAMethodRefusedOnARouteIsCountedUnderItsName pins the rejection
// counter's handler label of a 405, /-/quit's included (it was counted as
// "metrics" before the route table).
func TestAMethodRefusedOnARouteIsCountedUnderItsName(t *testing.T) {
	h, _ := newTestHandler(t, Options{EnableAdminAPI: true})
	for _, c := range []struct{ method, target, want string }{
		{http.MethodPatch, "/metrics/job/j", `handler="push",reason="method"`},
		{http.MethodPost, "/metrics", `handler="metrics",reason="method"`},
		{http.MethodDelete, "/-/quit", `handler="quit",reason="method"`},
		{http.MethodPost, "/api/v1/admin/wipe", `handler="wipe",reason="method"`},
	} {
		w := do(t, h, c.method, c.target, nil, nil)
		if w.Code != http.StatusMethodNotAllowed || !slices.Contains(strings.Split(w.Header().Get("Allow"), ", "), http.MethodOptions) {
			t.Errorf("%s %s: %d Allow %q, want 405 with OPTIONS allowed", c.method, c.target, w.Code, w.Header().Get("Allow"))
		}
		if got := scrapeText(t, h); !strings.Contains(got, "pushgate_rejected_requests_total{"+c.want+"} 1") {
			t.Errorf("%s %s: the scrape lacks %s:\n%s", c.method, c.target, c.want, got)
		}
	}
}
