package web

// The group page: one group's families and series, reached by the group's
// key in ?key=.

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/pushgate/pushgate/groupkey"
)

// encodeGroupParam encodes a grouping key for the ?key= parameter of the
// group page: unpadded base64url of the key's canonical ID. It is stable
// across restarts and holds any label value.
func encodeGroupParam(k groupkey.Key) string {
	return base64.RawURLEncoding.EncodeToString([]byte(k.ID()))
}

// decodeGroupParam reverses encodeGroupParam.
func decodeGroupParam(s string) (groupkey.Key, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return groupkey.Key{}, fmt.Errorf("invalid group key %q: %w", s, err)
	}
	k, err := groupkey.ParseID(string(raw))
	if err != nil {
		return groupkey.Key{}, fmt.Errorf("invalid group key %q: %w", s, err)
	}
	return k, nil
}

// familyView is one family on the group page.
type familyView struct {
	Name, Help, Type string
	LastPush         string
	Series           []seriesView
	Error            string
}

// groupPage is the data of the group template.
type groupPage struct {
	pageMeta
	Found       bool
	Problem     string
	KeyText     string
	Labels      []labelBadge
	PushTime    string
	PushAge     string
	FailureTime string
	// FailureReason is why the last rejected push was rejected, kept
	// with FailureTime (also after a later push succeeded).
	FailureReason string
	Failed        bool
	SeriesCount   int
	DeletePath    string
	Families      []familyView
}

// uiGroup serves one group's page: every family with HELP, TYPE, last push
// time and every series with its values.
func (h *Handler) uiGroup(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	page := groupPage{pageMeta: h.meta("Group")}
	key, err := decodeGroupParam(r.URL.Query().Get("key"))
	if err != nil {
		page.Problem = err.Error()
		h.render(w, r, http.StatusBadRequest, h.ui.group, page)
		return
	}
	page.KeyText = key.String()
	page.Labels = badges(key.Labels())
	g := h.store().Group(key)
	if g == nil {
		page.Problem = "No group " + key.String() + ": it was deleted, or never pushed."
		h.render(w, r, http.StatusNotFound, h.ui.group, page)
		return
	}
	page.Found = true
	page.Title = "Group " + key.String()
	page.PushTime = formatTime(g.PushTime())
	if pt := g.PushTime(); !pt.IsZero() {
		page.PushAge = humanAge(now.Sub(pt))
	}
	page.FailureTime = formatTime(g.FailureTime())
	page.FailureReason = g.FailureReason()
	page.Failed = !g.LastPushSuccessful()
	page.SeriesCount = g.SeriesCount()
	page.DeletePath = "metrics/" + key.Path(h.opts.UTF8Names)
	for _, f := range g.Families() {
		fv := familyView{Name: f.Name(), Help: f.Help(), Type: f.Type().String(), LastPush: formatTime(g.FamilyTime(f))}
		mf, err := f.Decode()
		if err != nil {
			fv.Error = err.Error()
		} else {
			for _, m := range mf.GetMetric() {
				fv.Series = append(fv.Series, newSeriesView(mf.GetType(), m))
			}
			// Pushed order is the client's (client_golang sends db10
			// before db2); show series by label values, naturally.
			slices.SortStableFunc(fv.Series, func(a, b seriesView) int { return compareLabelSets(a.Labels, b.Labels) })
		}
		page.Families = append(page.Families, fv)
	}
	h.render(w, r, http.StatusOK, h.ui.group, page)
}

// IsScalar reports whether the series has a single value.
func (sv seriesView) IsScalar() bool { return sv.Kind == kindScalar }

// IsSummary reports whether the series is a summary.
func (sv seriesView) IsSummary() bool { return sv.Kind == kindSummary }

// IsHistogram reports whether the series is a classic histogram.
func (sv seriesView) IsHistogram() bool { return sv.Kind == kindHistogram }

// IsNative reports whether the series is a native histogram.
func (sv seriesView) IsNative() bool { return sv.Kind == kindNative }

// Badges returns the series' labels in display order.
func (sv seriesView) Badges() []labelBadge { return badges(sv.Labels) }
