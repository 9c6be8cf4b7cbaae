package web

// The index page: the groups table, filtered, sorted and paged on the
// server.

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/labelmatch"
	"github.com/pushgate/pushgate/store"
)

// Limits of the index page's paging.
const (
	defaultPerPage = 100
	maxPerPage     = 1000
)

// indexQuery is the parsed query of the index page.
type indexQuery struct {
	Q         string
	Sort      string // key, age (oldest first) or recent (newest first)
	Stale     string // the threshold as entered
	StaleOnly bool
	Page      int
	PerPage   int

	// filter holds Q as its one selector when Q parses as matchers, and
	// the stale threshold: what the admin API's delete button sends, so
	// the page counts as stale exactly the groups the button deletes.
	filter groupFilter
	terms  []string // when Q is not matchers: lower-case substrings, all required
}

// parseIndexQuery reads the index page's parameters; staleness is judged as
// of now. Bad values are reported in the page, not as an error status: the
// user fixes the form.
func parseIndexQuery(v url.Values, now time.Time) (indexQuery, []string) {
	var problems []string
	q := indexQuery{
		Q:         strings.TrimSpace(v.Get("q")),
		Sort:      v.Get("sort"),
		Stale:     strings.TrimSpace(v.Get("stale")),
		StaleOnly: v.Get("stale_only") != "",
		Page:      1,
		PerPage:   defaultPerPage,
		filter:    groupFilter{now: now},
	}
	switch q.Sort {
	case "key", "age", "recent":
	case "":
		q.Sort = "key"
	default:
		problems = append(problems, fmt.Sprintf("unknown sort %q: sorted by key", q.Sort))
		q.Sort = "key"
	}
	if s := v.Get("page"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 1 {
			q.Page = n
		} else {
			problems = append(problems, fmt.Sprintf("invalid page %q", s))
		}
	}
	if s := v.Get("per_page"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 1 {
			q.PerPage = min(n, maxPerPage)
		} else {
			problems = append(problems, fmt.Sprintf("invalid per_page %q", s))
		}
	}
	if q.Stale != "" {
		d, err := parseDuration(q.Stale)
		if err != nil || d <= 0 {
			problems = append(problems, fmt.Sprintf("invalid stale threshold %q: use a duration like 30m, 6h or 2d", q.Stale))
			q.Stale = ""
		} else {
			q.filter.olderThan = d
		}
	}
	if q.StaleOnly && q.filter.olderThan == 0 {
		q.StaleOnly = false
	}
	if q.Q != "" {
		var matchers []labelmatch.Matcher
		if ms, err := labelmatch.Parse(q.Q); err == nil {
			matchers = ms
		} else if strings.ContainsAny(q.Q, "{}~\"") {
			// It looks like matcher syntax: say what is wrong with it,
			// then filter by text anyway.
			problems = append(problems, err.Error()+"; filtering by text instead")
		}
		if matchers != nil {
			q.filter.selectors = [][]labelmatch.Matcher{matchers}
		} else {
			q.terms = strings.Fields(strings.ToLower(q.Q))
		}
	}
	return q, problems
}

// matches reports whether the group key passes the text or matcher filter
// (the stale threshold aside).
func (q indexQuery) matches(k groupkey.Key) bool {
	if !q.filter.matchesKey(k) {
		return false
	}
	for _, t := range q.terms {
		found := false
		for _, l := range k.Labels() {
			// name=value, unquoted, so "job=backup" finds job="backup-1".
			if strings.Contains(strings.ToLower(l.Name+"="+l.Value), t) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// url returns the index URL for q with the given changes applied.
func (q indexQuery) url(base string, page int, sortBy string) string {
	v := url.Values{}
	if q.Q != "" {
		v.Set("q", q.Q)
	}
	if sortBy != "key" {
		v.Set("sort", sortBy)
	}
	if q.Stale != "" {
		v.Set("stale", q.Stale)
	}
	if q.StaleOnly {
		v.Set("stale_only", "1")
	}
	if page > 1 {
		v.Set("page", strconv.Itoa(page))
	}
	if q.PerPage != defaultPerPage {
		v.Set("per_page", strconv.Itoa(q.PerPage))
	}
	if len(v) == 0 {
		return base + "/"
	}
	return base + "/?" + v.Encode()
}

// indexRow is one group in the index table.
type indexRow struct {
	Link     string
	Labels   []labelBadge
	PushTime string
	PushISO  string
	Age      string
	Stale    bool
	Failed   bool
	// FailureReason is the last rejected push's reason, shown as the
	// hover text of the "last push failed" badge.
	FailureReason string
	Series        int
}

// sortLink is one of the table's sort choices.
type sortLink struct {
	Label, URL string
	Current    bool
}

// indexPage is the data of the index template.
type indexPage struct {
	pageMeta
	Query      indexQuery
	Problems   []string
	Total      int // groups in the store
	Matched    int // groups passing the filter (and stale_only)
	StaleCount int // stale groups among those passing the filter
	Rows       []indexRow
	Page       int
	Pages      int
	First      int // 1-based number of the first row shown
	Last       int
	PrevURL    string
	NextURL    string
	FirstURL   string
	LastURL    string
	Sorts      []sortLink
	// DeleteStaleQuery is the admin groups query that deletes the stale
	// groups matching the filter; empty when the button cannot be offered.
	DeleteStaleQuery string
	// DeleteStaleHint explains why there is no button despite stale groups.
	DeleteStaleHint string
}

// uiIndex serves the index page: the groups table with filter, sort,
// stale threshold and paging.
func (h *Handler) uiIndex(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	q, problems := parseIndexQuery(r.URL.Query(), now)
	meta := h.meta("Groups")
	all := h.store().Groups()
	page := indexPage{pageMeta: meta, Query: q, Problems: problems, Total: len(all)}

	matched := all[:0:0]
	for _, g := range all {
		if !q.matches(g.Key()) {
			continue
		}
		stale := q.filter.isOld(g)
		if stale {
			page.StaleCount++
		}
		if q.StaleOnly && !stale {
			continue
		}
		matched = append(matched, g)
	}
	page.Matched = len(matched)
	slices.SortFunc(matched, indexOrder(q.Sort))

	page.Pages = max(1, (len(matched)+q.PerPage-1)/q.PerPage)
	page.Page = min(q.Page, page.Pages)
	start := (page.Page - 1) * q.PerPage
	end := min(start+q.PerPage, len(matched))
	if start < end {
		page.First, page.Last = start+1, end
	}
	page.Rows = make([]indexRow, 0, end-start)
	for _, g := range matched[start:end] {
		pt := g.PushTime()
		row := indexRow{
			Link:     meta.Base + "/group?key=" + encodeGroupParam(g.Key()),
			Labels:   badges(g.Key().Labels()),
			PushTime: formatTime(pt),
			Age:      "never",
			Stale:    q.filter.isOld(g),
			Failed:   !g.LastPushSuccessful(),
			Series:   g.SeriesCount(),
		}
		if row.Failed {
			row.FailureReason = g.FailureReason()
		}
		if !pt.IsZero() {
			row.PushISO = pt.UTC().Format(time.RFC3339)
			row.Age = humanAge(now.Sub(pt))
		}
		page.Rows = append(page.Rows, row)
	}
	if page.Page > 1 {
		page.PrevURL = q.url(meta.Base, page.Page-1, q.Sort)
		page.FirstURL = q.url(meta.Base, 1, q.Sort)
	}
	if page.Page < page.Pages {
		page.NextURL = q.url(meta.Base, page.Page+1, q.Sort)
		page.LastURL = q.url(meta.Base, page.Pages, q.Sort)
	}
	for _, s := range []struct{ key, label string }{{"key", "labels"}, {"age", "oldest first"}, {"recent", "newest first"}} {
		page.Sorts = append(page.Sorts, sortLink{Label: s.label, URL: q.url(meta.Base, 1, s.key), Current: q.Sort == s.key})
	}
	if meta.Admin && page.StaleCount > 0 {
		switch {
		case q.Q == "" || len(q.filter.selectors) > 0:
			v := url.Values{}
			if q.Q != "" {
				v.Set("match[]", q.Q)
			}
			v.Set("older_than", q.Stale)
			page.DeleteStaleQuery = v.Encode()
		default:
			page.DeleteStaleHint = `To delete stale groups, filter with label matchers (for example job=~"backup-.*") instead of free text.`
		}
	}
	h.render(w, r, http.StatusOK, h.ui.index, page)
}

// indexOrder returns the order of the index table for a sort choice, in
// one comparison so that the table is sorted once: by key (see
// compareGroupKeys); by age, oldest successful push first (never pushed
// first of all), then by key; or by recency, newest first, then by key.
func indexOrder(sortBy string) func(a, b *store.Group) int {
	byKey := func(a, b *store.Group) int { return compareGroupKeys(a.Key(), b.Key()) }
	switch sortBy {
	case "age":
		return func(a, b *store.Group) int {
			if c := a.PushTime().Compare(b.PushTime()); c != 0 {
				return c
			}
			return byKey(a, b)
		}
	case "recent":
		return func(a, b *store.Group) int {
			if c := b.PushTime().Compare(a.PushTime()); c != 0 {
				return c
			}
			return byKey(a, b)
		}
	}
	return byKey
}
