package web

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/journal"
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
	if errors.Is(err, journal.ErrNotLeader) && !errors.Is(err, journal.ErrAmbiguous) {
		// This replica's term ended before the change reached the log, so
		// nothing was written: a replica that forwarded the write sends it
		// to the next leader instead of passing this answer on. A change
		// whose commit is in doubt is not marked: it may have landed, and
		// the client is told so.
		w.Header().Set(NotLeaderHeader, "")
	}
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
	reason, code := storeErrorStatus(err)
	h.fail(w, handler, reason, code, err)
}

// storeErrorStatus returns the reason (for the rejection counter) and the
// status code an error from the store, or a refusal of admission's, is
// answered with: the one place a refusal becomes a status.
func storeErrorStatus(err error) (reason string, code int) {
	var rej *admission.Error
	var perr *store.PersistenceError
	switch {
	case errors.As(err, &rej) && rej.Class == admission.StoreFull:
		// 507, not 429: the store as a whole is full, so retrying the same
		// push later (what 429 invites) fails again until someone deletes
		// groups or raises the limit.
		return rej.Reason, http.StatusInsufficientStorage
	case errors.As(err, &rej):
		// Refused and OverLimit: the push itself is wrong or too large.
		return rej.Reason, http.StatusBadRequest
	case errors.As(err, &perr) && perr.TooLarge():
		// The group as stored is over the log's request limit (cluster
		// mode): the same push will fail again, so not 503.
		return "too_large", http.StatusRequestEntityTooLarge
	case errors.As(err, &perr):
		return "persistence", http.StatusServiceUnavailable
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled", http.StatusServiceUnavailable
	default:
		return "internal", http.StatusInternalServerError
	}
}

// rejectPush answers a push that was refused like fail does, and logs a
// refusal the client caused (4xx, or 507 for a full store) at warn level
// with the client's address, at most once a second per reason (see
// rejectLog). Server failures are logged at error level by fail.
func (h *Handler) rejectPush(w http.ResponseWriter, r *http.Request, reason string, code int, err error) {
	h.fail(w, "push", reason, code, err)
	if code < http.StatusInternalServerError || code == http.StatusInsufficientStorage {
		h.rejects.log(h.logger, r, "push", reason, code, oneLine(err.Error()))
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
