package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/otlp"
	"github.com/pushgate/pushgate/store"
)

// maxDeltaAttempts bounds the pushes of one group's accumulated deltas
// that find the group changed since its state was read (another request
// wrote it meanwhile). Each attempt reads the state again; running out is
// answered 503, which OTLP clients retry.
const maxDeltaAttempts = 8

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
		if errors.Is(err, errDeltaConflict) {
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

// errDeltaConflict is returned when a group's accumulated deltas found the
// group changed on every attempt.
var errDeltaConflict = errors.New("the group kept changing while its deltas were summed; retry")

// otlpPushGroup pushes one group: its cumulative families as they are, and
// its delta families summed into the state the group holds. skipped counts
// the delta points not added (their window was summed already), skipReason
// says why.
func (h *Handler) otlpPushGroup(ctx context.Context, g *otlp.Group, at time.Time) (pos journal.Position, skipped int, skipReason string, err error) {
	if err := checkGroupLabels(g.Labels, h.opts.UTF8Names); err != nil {
		return 0, 0, "", &store.RejectError{Key: groupkey.New(g.Labels), Reason: err.Error()}
	}
	key := groupkey.New(g.Labels)
	st := h.store()
	if len(g.Deltas) == 0 || h.opts.OTLP.Settings.Delta == otlp.Reject {
		if len(g.Deltas) > 0 {
			skipped, skipReason = deltaPoints(g.Deltas), "delta temporality is refused (--otlp.delta=reject)"
		}
		pos, err = st.Push(ctx, store.Push{Key: key, Method: store.Merge, Families: g.Families, Time: at})
		return pos, skipped, skipReason, err
	}
	for attempt := 0; attempt < maxDeltaAttempts; attempt++ {
		states, head := st.HeadStates(key)
		acc, aerr := otlp.AddDeltas(states, g.Deltas)
		if aerr != nil {
			return 0, 0, "", &store.RejectError{Key: key, Reason: aerr.Error()}
		}
		// A new slice: appending to the translation's could write into
		// memory past its length that is not this group's.
		fams := make([]*dto.MetricFamily, 0, len(g.Families)+len(acc.Families))
		if attempt == 0 {
			fams = append(fams, g.Families...)
		} else {
			// The store sanitized them in place on the first attempt
			// (grouping labels added); each retry gets its own copy
			// rather than rely on that being idempotent. Retries are
			// rare: pushgate_otlp_delta_conflicts_total counts them.
			fams = append(fams, cloneFamilies(g.Families)...)
		}
		fams = append(fams, acc.Families...)
		pos, err = st.Push(ctx, store.Push{
			Key: key, Method: store.Merge, Families: fams, Time: at,
			States: acc.States, Expect: &head,
		})
		if errors.Is(err, store.ErrHeadChanged) {
			h.metrics.otlp.deltaConflicts.Inc()
			continue
		}
		if err == nil {
			h.metrics.otlp.deltaResets.Add(float64(acc.Resets))
		}
		return pos, acc.Skipped, acc.Reason, err
	}
	return 0, 0, "", errDeltaConflict
}

// cloneFamilies returns deep copies of fams.
func cloneFamilies(fams []*dto.MetricFamily) []*dto.MetricFamily {
	out := make([]*dto.MetricFamily, len(fams))
	for i, mf := range fams {
		out[i] = proto.Clone(mf).(*dto.MetricFamily)
	}
	return out
}

// groupPoints counts the points a group carries: one per series of its
// families but target_info (which is the resource, not a point), and one
// per delta point.
func groupPoints(g *otlp.Group) int {
	n := deltaPoints(g.Deltas)
	for _, mf := range g.Families {
		if mf.GetName() != "target_info" {
			n += len(mf.Metric)
		}
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

// checkGroupLabels applies the grouping path's rules to a key that a
// resource gave (the URL's were checked when parsed): a job, label names
// valid and not reserved, values valid UTF-8.
func checkGroupLabels(labels map[string]string, utf8Names bool) error {
	if labels["job"] == "" {
		return errJobRequired
	}
	for name, value := range labels {
		if !exposition.ValidLabelName(name, utf8Names) || strings.HasPrefix(name, "__") {
			return fmt.Errorf("improper label name %q in the group key", name)
		}
		if !utf8.ValidString(value) {
			return fmt.Errorf("value %q of label %q is not valid UTF-8", value, name)
		}
	}
	return nil
}

// groupKeyString names a group by its labels, as errors name groups.
func groupKeyString(labels map[string]string) string { return groupkey.New(labels).String() }
