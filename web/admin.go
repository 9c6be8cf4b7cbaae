package web

// The admin API, mounted only with --web.enable-admin-api:
//
//	PUT    /api/v1/admin/wipe                     delete every group (202)
//	GET    /api/v1/admin/groups?match[]=…&older_than=…   list matching groups
//	DELETE /api/v1/admin/groups?match[]=…&older_than=…[&dry_run=true]
//	                                              delete them, atomically
//
// A matcher is `name op "value"` with op one of = != =~ !~ (regular
// expressions are fully anchored, as in Prometheus), or a selector of such
// matchers, `{job=~"backup-.*",instance!=""}`. Several match[] are ORed, as
// in Prometheus' APIs: a group is selected when every matcher of one of them
// holds, so `match[]=job="a"&match[]=job="b"` deletes both jobs in one
// atomic change. A label absent from a grouping key matches as the empty
// value. older_than
// compares the last successful push: a group that never had one counts as
// infinitely old. Nothing is deleted unless a request asks for it; data never
// expires on its own.

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/store"
)

// apiWipe serves PUT /api/v1/admin/wipe: every group is removed in one atomic
// change, then 202 with an empty body.
func (h *Handler) apiWipe(w http.ResponseWriter, r *http.Request) {
	setAPIHeaders(w)
	pos, err := h.store().Wipe(r.Context())
	if err != nil {
		h.writeError(w, r, fmt.Errorf("wipe: %w", err))
		return
	}
	setCommitPosition(w, pos)
	w.WriteHeader(http.StatusAccepted)
}

// adminGroup is one group in an admin groups response.
type adminGroup struct {
	Labels map[string]string `json:"labels"`
	// LastPushTime is the last successful push, null if there was none.
	LastPushTime *string `json:"last_push_time"`
	// AgeSeconds is the time since LastPushTime, null if there was none.
	AgeSeconds         *float64 `json:"age_seconds"`
	LastPushSuccessful bool     `json:"last_push_successful"`
	// LastPushFailureReason is the one-line reason the last rejected push
	// was refused with, kept with the group's push_failure_time_seconds
	// (also after later successful pushes); absent when no push was
	// rejected. The UI shows it too; /api/v1/metrics has it as the
	// "reason" of the push_failure_time_seconds family.
	LastPushFailureReason string `json:"last_push_failure_reason,omitempty"`
	Series                int    `json:"series"`
}

// adminGroupsData is the data of an admin groups response.
type adminGroupsData struct {
	// DryRun is true when nothing was deleted although a DELETE asked.
	DryRun bool `json:"dry_run"`
	// Deleted is the number of groups deleted (0 for GET and dry runs).
	Deleted int          `json:"deleted"`
	Groups  []adminGroup `json:"groups"`
}

// newAdminGroup describes g as of now.
func newAdminGroup(g *store.Group, now time.Time) adminGroup {
	ag := adminGroup{
		Labels:                g.Key().Map(),
		LastPushSuccessful:    g.LastPushSuccessful(),
		LastPushFailureReason: g.FailureReason(),
		Series:                g.SeriesCount(),
	}
	if pt := g.PushTime(); !pt.IsZero() {
		s := pt.UTC().Format(time.RFC3339Nano)
		age := now.Sub(pt).Seconds()
		ag.LastPushTime, ag.AgeSeconds = &s, &age
	}
	return ag
}

// apiAdminGroups serves the stale-group cleanup API on /api/v1/admin/groups:
// GET lists the groups matching match[] and older_than; DELETE removes them
// in one atomic change (or, with dry_run=true, only lists what would go).
// A DELETE must name at least one match[] or older_than: deleting everything
// is the wipe endpoint's job.
func (h *Handler) apiAdminGroups(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodDelete {
		w.Header().Set("Allow", "DELETE, GET, OPTIONS")
		h.writeAPIError(w, http.StatusMethodNotAllowed, "bad_data", fmt.Errorf("method %s not allowed", r.Method))
		return
	}
	now := time.Now()
	f, err := parseGroupFilter(r, now)
	if err != nil {
		h.writeAPIError(w, http.StatusBadRequest, "bad_data", err)
		return
	}
	data := adminGroupsData{Groups: []adminGroup{}}
	if r.Method == http.MethodGet {
		groups := h.store().Groups()
		sortGroupsByKey(groups)
		for _, g := range groups {
			if f.matches(g) {
				data.Groups = append(data.Groups, newAdminGroup(g, now))
			}
		}
		h.writeAPI(w, http.StatusOK, data)
		return
	}

	if len(f.selectors) == 0 && f.olderThan == 0 {
		h.writeAPIError(w, http.StatusBadRequest, "bad_data",
			errors.New("no match[] and no older_than given: use /api/v1/admin/wipe to delete every group"))
		return
	}
	dryRun := false
	if s := r.URL.Query().Get("dry_run"); s != "" {
		if dryRun, err = strconv.ParseBool(s); err != nil {
			h.writeAPIError(w, http.StatusBadRequest, "bad_data", fmt.Errorf("invalid dry_run %q: want true or false", s))
			return
		}
	}
	// The match function runs under the store's lock: it only collects.
	var selected []*store.Group
	_, pos, err := h.store().DeleteWhere(r.Context(), func(g *store.Group) bool {
		if !f.matches(g) {
			return false
		}
		selected = append(selected, g)
		return true
	}, dryRun)
	if err != nil {
		h.writeError(w, r, fmt.Errorf("delete groups: %w", err))
		return
	}
	sortGroupsByKey(selected)
	for _, g := range selected {
		data.Groups = append(data.Groups, newAdminGroup(g, now))
	}
	data.DryRun = dryRun
	if !dryRun {
		data.Deleted = len(selected)
		h.logger.Info("deleted groups through the admin API", "count", len(selected), "query", r.URL.RawQuery)
	}
	setCommitPosition(w, pos)
	h.writeAPI(w, http.StatusOK, data)
}

// sortGroupsByKey sorts groups in display order (see compareGroupKeys).
func sortGroupsByKey(gs []*store.Group) {
	slices.SortStableFunc(gs, func(a, b *store.Group) int { return compareGroupKeys(a.Key(), b.Key()) })
}

// compareGroupKeys orders grouping keys the way people read them: by job,
// then by instance (absent first), then by the remaining labels, every value
// in natural order (db2 before db10). Store.Groups orders by the canonical
// ID instead, where a key with an "instance" label sorts before every
// job-only key.
func compareGroupKeys(a, b groupkey.Key) int {
	if c := naturalCompare(a.Job(), b.Job()); c != 0 {
		return c
	}
	ai, aok := a.Get("instance")
	bi, bok := b.Get("instance")
	switch {
	case aok != bok:
		if !aok {
			return -1
		}
		return 1
	case ai != bi:
		return naturalCompare(ai, bi)
	}
	return compareLabelSets(a.Labels(), b.Labels())
}
