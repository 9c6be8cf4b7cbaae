package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/otlp"
	"github.com/pushgate/pushgate/store"
)

// maxStateAttempts bounds the pushes of one group that find the group
// changed since its states were read (another request wrote it
// meanwhile). Each attempt reads the states again; running out is
// answered 503, which OTLP clients retry.
const maxStateAttempts = 8

// otlpStore pushes the groups in order, each as a POST push of the
// families it carries. A group the store's checks refuse has its points
// reported rejected and the others stay stored; a request all of whose
// groups were refused is refused as a whole (400). A failure of the store
// itself (persistence, not the leader, canceled) refuses the rest of the
// request with its status: the groups stored before it stay, and the
// client's retry stores them again to the same effect.
func (h *Handler) otlpStore(ctx context.Context, groups []otlp.Group, at time.Time) (otlpAnswer, *otlpRefusal) {
	var (
		ans     otlpAnswer
		refusal []*otlpRefusal
		stored  int
	)
	note := func(n int, reason string) {
		ans.rejected += n
		if ans.reason == "" && reason != "" {
			ans.reason = reason
		}
	}
	for i := range groups {
		g := &groups[i]
		note(g.Rejected, g.Reason)
		if len(g.Families) == 0 && len(g.Deltas) == 0 {
			continue
		}
		pos, skipped, skipReason, err := h.otlpPushGroup(ctx, g, at)
		if err == nil {
			note(skipped, skipReason)
			ans.pos = max(ans.pos, pos)
			stored++
			continue
		}
		reason, code := storeErrorStatus(err)
		if errors.Is(err, errStateConflict) {
			reason, code = "conflict", http.StatusServiceUnavailable
		}
		if code >= http.StatusInternalServerError && code != http.StatusInsufficientStorage {
			return ans, otlpRefuse(code, reason, err)
		}
		refusal = append(refusal, otlpRefuse(http.StatusBadRequest, reason, err))
		note(groupPoints(g), fmt.Sprintf("group %s refused: %s", groupKeyString(g.Labels), oneLine(err.Error())))
	}
	if stored == 0 && ans.rejected > 0 {
		// Nothing was stored and something was refused: the request is
		// refused as a whole, with the first reason (a client must not
		// retry it as it is).
		if len(refusal) > 0 {
			return ans, refusal[0]
		}
		return ans, otlpRefuse(http.StatusBadRequest, "points", errors.New(ans.reason))
	}
	// Stored in part: each refused group is counted as a refusal, though
	// the request is answered 200.
	for _, ref := range refusal {
		h.metrics.reject(otlpHandler, ref.reason)
	}
	return ans, nil
}

// errStateConflict is returned when a group was found changed on every
// attempt to push it.
var errStateConflict = errors.New("the group kept changing while its states were read; retry")

// otlpPushGroup pushes one group: its cumulative families as they are, but
// those older than the stored ones, and its delta families summed into the
// states the group holds. skipped counts the points not stored (deltas
// summed already or refused, families out of order), skipReason says why
// the first was not.
//
// Every family the push stores gets a state (otlp.AppendFamilyState,
// otlp.AddDeltas) holding its newest point time, so that an older request
// (a replay of an earlier run's export) does not roll the family back: its
// family is refused as out of order, as Prometheus refuses samples older
// than the series' newest. The push expects the head whose states it
// checked, so two requests cannot both pass the check against one state.
func (h *Handler) otlpPushGroup(ctx context.Context, g *otlp.Group, at time.Time) (pos journal.Position, skipped int, skipReason string, err error) {
	key := groupkey.New(g.Labels)
	if err := admission.GroupingLabels(key, h.opts.UTF8Names, h.store().Limits()); err != nil {
		return 0, 0, "", err
	}
	st := h.store()
	deltas := g.Deltas
	var refused pointTally
	if len(deltas) > 0 && h.opts.OTLP.Settings.Delta == otlp.Reject {
		refused.add(deltaPoints(deltas), "delta temporality is refused (--otlp.delta=reject)")
		deltas = nil
	}
	for attempt := 0; attempt < maxStateAttempts; attempt++ {
		states, head := st.HeadStates(key)
		skip := refused
		var acc otlp.Accumulation
		if len(deltas) > 0 {
			var aerr error
			if acc, aerr = otlp.AddDeltas(states, deltas); aerr != nil {
				return 0, 0, "", admission.Refusal(aerr)
			}
		}
		// A new slice: appending to the translation's could write into
		// memory past its length that is not this group's.
		fams := make([]*dto.MetricFamily, 0, len(g.Families)+len(acc.Families))
		pushStates := acc.States
		if pushStates == nil {
			pushStates = make(map[string][]byte, len(g.Families))
		}
		// The families' states share one buffer: the store copies each.
		buf := make([]byte, 0, 16*len(g.Families))
		for i, mf := range g.Families {
			name := mf.GetName()
			t := familyTime(g, i)
			stored := states[name]
			if storedT, ok := otlp.FamilyTime(stored); ok && !t.IsZero() && t.Before(storedT) {
				skip.add(familyPoints(mf), fmt.Sprintf("family %s is older than the stored value (out of order): its newest point is at %s, the stored family's at %s; not stored",
					name, t.UTC().Format(time.RFC3339Nano), storedT.UTC().Format(time.RFC3339Nano)))
				continue
			}
			if attempt > 0 {
				// The store sanitized the families in place on the
				// first attempt (grouping labels added); each retry
				// gets its own copy rather than rely on that being
				// idempotent. Retries are rare:
				// pushgate_otlp_delta_conflicts_total counts them.
				mf = proto.Clone(mf).(*dto.MetricFamily)
			}
			fams = append(fams, mf)
			start := len(buf)
			buf = otlp.AppendFamilyState(buf, stored, mf.GetType(), t)
			// Capped, so that a later append cannot write over it; one
			// that grows buf leaves the earlier states in the old array.
			pushStates[name] = buf[start:len(buf):len(buf)]
		}
		fams = append(fams, acc.Families...)
		skip.add(acc.Skipped, acc.Reason)
		if len(fams) == 0 {
			// Nothing is newer than what the group holds: nothing
			// to store, and nothing changed.
			return 0, skip.n, skip.reason, nil
		}
		pos, err = st.Push(ctx, store.Push{
			Key: key, Method: store.Merge, Families: fams, Time: at,
			States: pushStates, Expect: &head,
		})
		if errors.Is(err, store.ErrHeadChanged) {
			h.metrics.otlp.deltaConflicts.Inc()
			continue
		}
		if err == nil {
			h.metrics.otlp.deltaResets.Add(float64(acc.Resets))
		}
		return pos, skip.n, skip.reason, err
	}
	return 0, 0, "", errStateConflict
}

// pointTally counts points not stored and keeps the first reason.
type pointTally struct {
	n      int
	reason string
}

func (pt *pointTally) add(n int, reason string) {
	if n == 0 {
		return
	}
	pt.n += n
	if pt.reason == "" {
		pt.reason = reason
	}
}

// familyTime returns the newest point time of g.Families[i], zero for none.
func familyTime(g *otlp.Group, i int) time.Time {
	if i < len(g.Times) {
		return g.Times[i]
	}
	return time.Time{}
}

// familyPoints counts the points of a family stored as sent: its series,
// none for target_info (the resource, not a point).
func familyPoints(mf *dto.MetricFamily) int {
	if mf.GetName() == "target_info" {
		return 0
	}
	return len(mf.Metric)
}

// groupPoints counts the points a group carries: one per series of its
// families but target_info (which is the resource, not a point), and one
// per delta point.
func groupPoints(g *otlp.Group) int {
	n := deltaPoints(g.Deltas)
	for _, mf := range g.Families {
		n += familyPoints(mf)
	}
	return n
}

// deltaPoints counts delta points.
func deltaPoints(deltas []otlp.DeltaFamily) int {
	n := 0
	for _, d := range deltas {
		n += len(d.Family.GetMetric())
	}
	return n
}

// groupKeyString names a group by its labels, as errors name groups.
func groupKeyString(labels map[string]string) string { return groupkey.New(labels).String() }
