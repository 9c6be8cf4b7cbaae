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
// matchers, `{job=~"backup-.*",instance!=""}`. Every match[] parameter must
// hold — unlike Prometheus' series API, where several match[] are ORed. A
// label absent from a grouping key matches as the empty value. older_than
// compares the last successful push: a group that never had one counts as
// infinitely old. Nothing is deleted unless a request asks for it; data never
// expires on its own.

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/model"

	"github.com/pushgate/pushgate/store"
)

// apiWipe serves PUT /api/v1/admin/wipe: every group is removed in one atomic
// change, then 202 with an empty body.
func (h *Handler) apiWipe(w http.ResponseWriter, r *http.Request) {
	setAPIHeaders(w)
	if err := h.store.Wipe(r.Context()); err != nil {
		h.writeError(w, r, fmt.Errorf("wipe: %w", err))
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// groupFilter selects groups by grouping-label matchers and the age of their
// last successful push.
type groupFilter struct {
	matchers []labelMatcher
	// olderThan, when positive, selects groups whose last successful push
	// is before now - olderThan.
	olderThan time.Duration
	now       time.Time
}

// matches reports whether g is selected.
func (f groupFilter) matches(g *store.Group) bool {
	key := g.Key()
	for _, m := range f.matchers {
		v, _ := key.Get(m.name)
		if !m.matches(v) {
			return false
		}
	}
	if f.olderThan > 0 {
		pt := g.PushTime()
		if !pt.IsZero() && !pt.Before(f.now.Add(-f.olderThan)) {
			return false
		}
	}
	return true
}

// parseGroupFilter reads match[] and older_than from the request's query.
func parseGroupFilter(r *http.Request, now time.Time) (groupFilter, error) {
	q := r.URL.Query()
	f := groupFilter{now: now}
	for _, s := range q["match[]"] {
		ms, err := parseMatchers(s)
		if err != nil {
			return f, err
		}
		f.matchers = append(f.matchers, ms...)
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

// adminGroup is one group in an admin groups response.
type adminGroup struct {
	Labels map[string]string `json:"labels"`
	// LastPushTime is the last successful push, null if there was none.
	LastPushTime *string `json:"last_push_time"`
	// AgeSeconds is the time since LastPushTime, null if there was none.
	AgeSeconds         *float64 `json:"age_seconds"`
	LastPushSuccessful bool     `json:"last_push_successful"`
	Series             int      `json:"series"`
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
		Labels:             g.Key().Map(),
		LastPushSuccessful: g.LastPushSuccessful(),
		Series:             g.SeriesCount(),
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
		groups := h.store.Groups()
		sortGroupsByKey(groups)
		for _, g := range groups {
			if f.matches(g) {
				data.Groups = append(data.Groups, newAdminGroup(g, now))
			}
		}
		h.writeAPI(w, http.StatusOK, data)
		return
	}

	if len(f.matchers) == 0 && f.olderThan == 0 {
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
	_, err = h.store.DeleteWhere(r.Context(), func(g *store.Group) bool {
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
	h.writeAPI(w, http.StatusOK, data)
}

// sortGroupsByKey sorts groups in display order (see compareGroupKeys).
func sortGroupsByKey(gs []*store.Group) {
	slices.SortStableFunc(gs, func(a, b *store.Group) int { return compareGroupKeys(a.Key(), b.Key()) })
}

// compareGroupKeys orders grouping keys the way people read them: by job,
// then by instance (absent first), then by the remaining labels. Store.Groups
// orders by the canonical ID instead, where a key with an "instance" label
// sorts before every job-only key.
func compareGroupKeys(a, b store.GroupKey) int {
	if c := strings.Compare(a.Job(), b.Job()); c != 0 {
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
		return strings.Compare(ai, bi)
	}
	return strings.Compare(a.ID(), b.ID())
}

// matchOp is a label matcher's operator.
type matchOp string

// The four Prometheus matcher operators.
const (
	opEqual    matchOp = "="
	opNotEqual matchOp = "!="
	opRegexp   matchOp = "=~"
	opNotRegex matchOp = "!~"
)

// labelMatcher matches one grouping label's value.
type labelMatcher struct {
	name  string
	op    matchOp
	value string
	re    *regexp.Regexp // for =~ and !~, anchored
}

// String renders the matcher in Prometheus syntax.
func (m labelMatcher) String() string {
	return m.name + string(m.op) + strconv.Quote(m.value)
}

// matches reports whether the label value v satisfies m.
func (m labelMatcher) matches(v string) bool {
	switch m.op {
	case opEqual:
		return v == m.value
	case opNotEqual:
		return v != m.value
	case opRegexp:
		return m.re.MatchString(v)
	default:
		return !m.re.MatchString(v)
	}
}

// parseMatchers parses `name op "value"`, a comma-separated list of those,
// or a selector `{…}` holding such a list.
func parseMatchers(s string) ([]labelMatcher, error) {
	p := matcherParser{src: s}
	ms, err := p.parse()
	if err != nil {
		return nil, fmt.Errorf("invalid matcher %q: %w", s, err)
	}
	return ms, nil
}

// matcherParser is a small hand-written scanner for label matchers; the
// Prometheus parser would pull in the whole PromQL package.
type matcherParser struct {
	src string
	pos int
}

func (p *matcherParser) parse() ([]labelMatcher, error) {
	p.skipSpace()
	braced := p.peek() == '{'
	if braced {
		p.pos++
	}
	var out []labelMatcher
	for {
		p.skipSpace()
		if braced && p.peek() == '}' && len(out) == 0 {
			break // {} is an empty selector
		}
		m, err := p.matcher()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
		p.skipSpace()
		if p.peek() != ',' {
			break
		}
		p.pos++
		p.skipSpace()
		if braced && p.peek() == '}' {
			break // trailing comma, as Prometheus allows
		}
	}
	if braced {
		if p.peek() != '}' {
			return nil, p.errorf("expected , or }")
		}
		p.pos++
		p.skipSpace()
	}
	if p.pos != len(p.src) {
		return nil, p.errorf("unexpected %q", p.src[p.pos:])
	}
	if len(out) == 0 {
		return nil, errors.New("no matcher")
	}
	return out, nil
}

// matcher reads one `name op "value"`.
func (p *matcherParser) matcher() (labelMatcher, error) {
	var m labelMatcher
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos], p.pos == start) {
		p.pos++
	}
	if p.pos == start {
		if p.peek() == '"' {
			// A quoted (UTF-8) label name, as Prometheus 3 writes them.
			name, err := p.quoted()
			if err != nil {
				return m, err
			}
			m.name = name
		} else {
			return m, p.errorf("expected a label name")
		}
	} else {
		m.name = p.src[start:p.pos]
	}
	p.skipSpace()
	switch {
	case strings.HasPrefix(p.src[p.pos:], "=~"):
		m.op = opRegexp
	case strings.HasPrefix(p.src[p.pos:], "!~"):
		m.op = opNotRegex
	case strings.HasPrefix(p.src[p.pos:], "!="):
		m.op = opNotEqual
	case strings.HasPrefix(p.src[p.pos:], "="):
		m.op = opEqual
	default:
		return m, p.errorf("expected one of = != =~ !~ after %q", m.name)
	}
	p.pos += len(m.op)
	p.skipSpace()
	v, err := p.quoted()
	if err != nil {
		return m, err
	}
	m.value = v
	if m.op == opRegexp || m.op == opNotRegex {
		re, err := regexp.Compile("^(?s:" + v + ")$")
		if err != nil {
			return m, fmt.Errorf("bad regular expression for %s: %w", m.name, err)
		}
		m.re = re
	}
	return m, nil
}

// quoted reads a "double", 'single' or `raw` quoted string.
func (p *matcherParser) quoted() (string, error) {
	q := p.peek()
	if q != '"' && q != '\'' && q != '`' {
		return "", p.errorf("expected a quoted value")
	}
	start := p.pos
	p.pos++
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '\\' && q != '`':
			p.pos += 2
			continue
		case c == q:
			p.pos++
			lit := p.src[start:p.pos]
			if q == '\'' {
				// Single-quoted like Prometheus: reuse Go's rules by
				// swapping the quotes.
				inner := strings.ReplaceAll(lit[1:len(lit)-1], `"`, `\"`)
				inner = strings.ReplaceAll(inner, `\'`, `'`)
				lit = `"` + inner + `"`
			}
			v, err := strconv.Unquote(lit)
			if err != nil {
				return "", fmt.Errorf("bad quoted string %s: %w", p.src[start:p.pos], err)
			}
			if !utf8.ValidString(v) {
				return "", fmt.Errorf("quoted string %s is not valid UTF-8", p.src[start:p.pos])
			}
			return v, nil
		}
		p.pos++
	}
	return "", p.errorf("unterminated quoted string")
}

func (p *matcherParser) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *matcherParser) skipSpace() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t' || p.src[p.pos] == '\n') {
		p.pos++
	}
}

func (p *matcherParser) errorf(format string, args ...any) error {
	return fmt.Errorf("at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

// isNameByte reports whether c may appear in a legacy label name.
func isNameByte(c byte, first bool) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9')
}
