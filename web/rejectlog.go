package web

import (
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// rejectLogInterval is the least time between two log lines about rejected
// pushes of the same reason.
const rejectLogInterval = time.Second

// rejectLog logs rejected pushes at warn level with the client's address and
// the reason, as the reference logs inconsistent pushes, but at most one line
// per second per reason, so that a misbehaving client cannot flood the log.
// Each line counts, as "suppressed", the rejections of its reason left
// unlogged since the previous line of that reason; all of them are counted
// in pushgate_rejected_requests_total. The zero value is ready to use.
type rejectLog struct {
	// now is the clock; nil means time.Now.
	now func() time.Time

	mu      sync.Mutex
	reasons map[string]*reasonLog
}

// reasonLog is the state of one reason's log lines.
type reasonLog struct {
	last       time.Time
	suppressed int
}

// log records one rejected request and logs it unless a line of the same
// reason was logged less than rejectLogInterval ago.
func (l *rejectLog) log(logger *slog.Logger, r *http.Request, handler, reason string, code int, msg string) {
	now := time.Now
	if l.now != nil {
		now = l.now
	}
	t := now()
	l.mu.Lock()
	if l.reasons == nil {
		l.reasons = map[string]*reasonLog{}
	}
	st := l.reasons[reason]
	if st == nil {
		// Reasons are the fixed set of pushgate_rejected_requests_total's
		// reason label, so the map stays small.
		st = &reasonLog{}
		l.reasons[reason] = st
	}
	if !st.last.IsZero() && t.Sub(st.last) < rejectLogInterval {
		st.suppressed++
		l.mu.Unlock()
		return
	}
	suppressed := st.suppressed
	st.last, st.suppressed = t, 0
	l.mu.Unlock()
	logger.Warn("push rejected", "handler", handler, "client", r.RemoteAddr, "code", code, "reason", reason, "err", msg, "suppressed", suppressed)
}
