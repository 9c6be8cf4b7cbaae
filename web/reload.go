package web

import (
	"fmt"
	"net/http"
)

// reload serves PUT|POST /-/reload, routed only with --web.enable-lifecycle
// (the reference has no reload endpoint: 404 otherwise). It re-reads the
// permission file: 200 when the new file is in force, 500 with the reason
// when it is bad and the previous policy stays. Without a permission file
// there is nothing to reload, which is not an error.
func (h *Handler) reload(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if h.opts.Permissions == nil {
		_, _ = w.Write([]byte("OK: nothing to reload (no --web.permissions-file)\n"))
		return
	}
	if err := h.opts.Permissions.Reload(); err != nil {
		h.fail(w, "reload", "reload_failed", http.StatusInternalServerError, fmt.Errorf("reload failed, the previous permissions stay in force: %w", err))
		return
	}
	_, _ = w.Write([]byte("OK: permission file reloaded\n"))
}
