package web

import (
	"net/http"
)

// healthy answers 200 whenever the process serves HTTP, also while loading.
func (h *Handler) healthy(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("OK\n"))
}

// ready answers 200 once the stored state is loaded, 503 before.
func (h *Handler) ready(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !h.opts.Ready() {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("Service Unavailable: loading stored state\n"))
		return
	}
	_, _ = w.Write([]byte("OK\n"))
}

// quit begins a graceful shutdown when --web.enable-lifecycle is set.
func (h *Handler) quit(w http.ResponseWriter, r *http.Request) {
	if !h.opts.EnableLifecycle || h.opts.Quit == nil {
		http.Error(w, "Lifecycle API is not enabled.", http.StatusForbidden)
		return
	}
	_, _ = w.Write([]byte("Requesting termination... Goodbye!\n"))
	go h.opts.Quit()
}

// quitGet answers GET /-/quit like the reference.
func (h *Handler) quitGet(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", "POST, PUT")
	http.Error(w, "Only POST or PUT requests allowed.", http.StatusMethodNotAllowed)
}
