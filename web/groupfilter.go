package web

// Which groups a request selects: the admin groups API's match[] and
// older_than, and the UI index page's filter and stale threshold, by the
// same matcher and age rules.

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/common/model"

	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/labelmatch"
	"github.com/pushgate/pushgate/store"
)

// groupFilter selects groups by grouping-label selectors and the age of their
// last successful push. The admin groups API builds one from match[] and
// older_than; the UI index page builds one from its filter (one selector)
// and stale threshold, so that its "delete stale groups" button, which
// sends the same selector and threshold to the admin API, deletes exactly
// the groups the page counts as stale.
type groupFilter struct {
	// selectors are the match[] parameters, each a list of matchers that
	// must all hold; a group must satisfy one of them (any, when none).
	selectors [][]labelmatch.Matcher
	// olderThan, when positive, selects groups whose last successful push
	// is before now - olderThan.
	olderThan time.Duration
	now       time.Time
}

// matches reports whether g is selected: its key satisfies a selector and,
// with a threshold, it is old.
func (f groupFilter) matches(g *store.Group) bool {
	return f.matchesKey(g.Key()) && (f.olderThan <= 0 || f.isOld(g))
}

// matchesKey reports whether key satisfies one of the selectors. A label
// absent from the key matches as the empty value, as in Prometheus.
func (f groupFilter) matchesKey(key groupkey.Key) bool {
	if len(f.selectors) == 0 {
		return true
	}
next:
	for _, sel := range f.selectors {
		for _, m := range sel {
			v, _ := key.Get(m.Name)
			if !m.Matches(v) {
				continue next
			}
		}
		return true
	}
	return false
}

// isOld reports whether f has a threshold and g's last successful push is
// older than it. A group that never had one counts as infinitely old.
func (f groupFilter) isOld(g *store.Group) bool {
	if f.olderThan <= 0 {
		return false
	}
	pt := g.PushTime()
	return pt.IsZero() || pt.Before(f.now.Add(-f.olderThan))
}

// parseGroupFilter reads match[] and older_than from the request's query.
func parseGroupFilter(r *http.Request, now time.Time) (groupFilter, error) {
	q := r.URL.Query()
	f := groupFilter{now: now}
	for _, s := range q["match[]"] {
		ms, err := labelmatch.Parse(s)
		if err != nil {
			return f, err
		}
		f.selectors = append(f.selectors, ms)
	}
	if s := q.Get("older_than"); s != "" {
		d, err := parseDuration(s)
		if err != nil {
			return f, fmt.Errorf("invalid older_than %q: %w", s, err)
		}
		if d <= 0 {
			return f, fmt.Errorf("invalid older_than %q: must be positive", s)
		}
		f.olderThan = d
	}
	return f, nil
}

// parseDuration accepts Prometheus durations ("90s", "2h", "1d", "1w",
// "1h30m") and Go durations ("1.5h").
func parseDuration(s string) (time.Duration, error) {
	if d, err := model.ParseDuration(s); err == nil {
		return time.Duration(d), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New(`not a duration like "90s", "2h", "1d"`)
	}
	return d, nil
}
