package web

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/pushgate/pushgate/store"
)

// errLoading answers requests that arrive while the journal is replayed.
var errLoading = errors.New("pushgate is still loading its stored state; retry shortly")

// statusError is an error that carries the status code to answer with.
type statusError struct {
	code int
	err  error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// statusOf returns the status code an error asks for, or 400.
func statusOf(err error) int {
	var se *statusError
	if errors.As(err, &se) {
		return se.code
	}
	return http.StatusBadRequest
}

// fail answers a rejected request with code and a one-line reason, counts it
// by reason and logs it at debug level (rejections are the clients' problem
// and must not flood the log); only server failures are logged as errors.
func (h *Handler) fail(w http.ResponseWriter, handler, reason string, code int, err error) {
	h.metrics.reject(handler, reason)
	msg := oneLine(err.Error())
	// 507 is a full store: clients cause it at will, so it is logged like a
	// client error and shows in the rejection counter instead.
	if code >= 500 && code != http.StatusInsufficientStorage {
		h.logger.Error("request failed", "handler", handler, "reason", reason, "err", msg)
	} else {
		h.logger.Debug("request rejected", "handler", handler, "reason", reason, "code", code, "err", msg)
	}
	http.Error(w, msg, code)
}

// writeStoreError maps an error from the store to a response.
func (h *Handler) writeStoreError(w http.ResponseWriter, handler string, err error) {
	var rej *store.RejectError
	var perr *store.PersistenceError
	var lerr *store.LimitError
	switch {
	case errors.As(err, &lerr) && lerr.StoreFull:
		// 507, not 429: the store as a whole is full, so retrying the same
		// push later (what 429 invites) fails again until someone deletes
		// groups or raises the limit.
		h.fail(w, handler, lerr.Reason, http.StatusInsufficientStorage, err)
	case errors.As(err, &lerr):
		h.fail(w, handler, lerr.Reason, http.StatusBadRequest, err)
	case errors.As(err, &rej):
		h.fail(w, handler, "inconsistent", http.StatusBadRequest, err)
	case errors.As(err, &perr):
		h.fail(w, handler, "persistence", http.StatusServiceUnavailable, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		h.fail(w, handler, "canceled", http.StatusServiceUnavailable, err)
	default:
		h.fail(w, handler, "internal", http.StatusInternalServerError, err)
	}
}

// writeError maps any error from a handler to a response (used by the API).
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	h.writeStoreError(w, strings.TrimPrefix(r.URL.Path, h.opts.RoutePrefix), err)
}

// oneLine folds a message onto one line.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(strings.NewReplacer("\r", " ", "\n", " ").Replace(s)), " ")
}
