package web

// The web UI: a paged, filterable table of groups (/), one group's families
// and series (/group?key=…), and the status page (/status). Pages are
// rendered on the server from templates parsed once at start, and read
// without JavaScript; the small script in static/ui.js only sends deletes.
//
// The reference renders the whole store into one page (25 MB and ~10 s at
// 4,000 groups, REFERENCE §4.5). Here the index renders one page of rows
// (100 by default), so its size and time do not grow with the store beyond
// the sort and filter over the group list.

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"maps"
	"math"
	"net/http"
	"net/url"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/labelmatch"
	"github.com/pushgate/pushgate/store"
)

//go:embed ui/templates/*.html ui/static/*
var uiFiles embed.FS

// Limits of the index page's paging.
const (
	defaultPerPage = 100
	maxPerPage     = 1000
)

// uiContentSecurityPolicy allows only the gateway's own script, style and
// fetches: no inline script, so an escaped label value could not run even
// if escaping failed.
const uiContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// uiAssets holds the parsed templates and the static files, read once from
// the embedded files when the handler is built.
type uiAssets struct {
	index, group, status *template.Template
	static               map[string]staticFile
	// version changes whenever a static file does; links carry it as ?v= so
	// that browsers may cache the files for good.
	version string
}

// staticFile is one embedded static file.
type staticFile struct {
	body        []byte
	contentType string
	etag        string
}

// newUIAssets parses the embedded templates and loads the static files.
func newUIAssets() (*uiAssets, error) {
	a := &uiAssets{static: make(map[string]staticFile)}
	layout, err := template.New("layout.html").ParseFS(uiFiles, "ui/templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("parse UI layout: %w", err)
	}
	for _, p := range []struct {
		dst  **template.Template
		name string
	}{{&a.index, "index.html"}, {&a.group, "group.html"}, {&a.status, "status.html"}} {
		t, err := template.Must(layout.Clone()).ParseFS(uiFiles, "ui/templates/"+p.name)
		if err != nil {
			return nil, fmt.Errorf("parse UI template %s: %w", p.name, err)
		}
		*p.dst = t.Lookup(p.name)
		if *p.dst == nil {
			return nil, fmt.Errorf("parse UI template %s: not defined", p.name)
		}
	}

	all := sha256.New()
	err = fs.WalkDir(uiFiles, "ui/static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := uiFiles.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		all.Write(sum[:])
		a.static[path.Base(p)] = staticFile{
			body:        body,
			contentType: contentTypeOf(p),
			etag:        `"` + hex.EncodeToString(sum[:8]) + `"`,
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load UI static files: %w", err)
	}
	a.version = hex.EncodeToString(all.Sum(nil)[:6])
	return a, nil
}

// contentTypeOf returns the content type of a static file by extension.
func contentTypeOf(name string) string {
	switch path.Ext(name) {
	case ".css":
		return "text/css; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".ico":
		return "image/x-icon"
	}
	return "application/octet-stream"
}

// pageMeta is what every page's layout needs.
type pageMeta struct {
	Title string
	// Base is the path prefix of every link: the external URL's path, else
	// the route prefix ("" at the root).
	Base          string
	Version       string
	TelemetryPath string
	Admin         bool
}

// meta returns the layout data for a page titled title.
func (h *Handler) meta(title string) pageMeta {
	base := h.opts.ExternalPath
	if base == "" {
		base = h.opts.RoutePrefix
	}
	return pageMeta{
		Title:         title,
		Base:          strings.TrimRight(base, "/"),
		Version:       h.ui.version,
		TelemetryPath: h.opts.TelemetryPath,
		Admin:         h.opts.EnableAdminAPI,
	}
}

// render executes t into a buffer first, so that a template error becomes a
// 500 instead of half a page.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, t *template.Template, data any) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		h.logger.Error("render UI page", "page", t.Name(), "err", err)
		http.Error(w, "rendering the page failed: "+oneLine(err.Error()), http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Content-Length", strconv.Itoa(buf.Len()))
	hd.Set("Cache-Control", "no-store")
	hd.Set("Content-Security-Policy", uiContentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// labelBadge is one label shown as a badge.
type labelBadge struct {
	Name, Value string
	// Class is "job", "instance" or "" for other labels.
	Class string
}

// Text renders the badge as name="value", quoting a UTF-8 name as
// Prometheus 3 does and escaping non-printable characters in the value.
func (b labelBadge) Text() string {
	name := b.Name
	if !exposition.ValidLabelName(name, false) {
		name = strconv.Quote(name)
	}
	return name + "=" + strconv.Quote(b.Value)
}

// badges orders labels for display: job first, instance second, the rest by
// name.
func badges(labels []store.Label) []labelBadge {
	out := make([]labelBadge, 0, len(labels))
	for _, first := range []string{"job", "instance"} {
		for _, l := range labels {
			if l.Name == first {
				out = append(out, labelBadge{Name: l.Name, Value: l.Value, Class: first})
			}
		}
	}
	for _, l := range labels {
		if l.Name != "job" && l.Name != "instance" {
			out = append(out, labelBadge{Name: l.Name, Value: l.Value})
		}
	}
	return out
}

// encodeGroupParam encodes a grouping key for the ?key= parameter of the
// group page: unpadded base64url of the key's canonical ID. It is stable
// across restarts and holds any label value.
func encodeGroupParam(k store.GroupKey) string {
	return base64.RawURLEncoding.EncodeToString([]byte(k.ID()))
}

// decodeGroupParam reverses encodeGroupParam.
func decodeGroupParam(s string) (store.GroupKey, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return store.GroupKey{}, fmt.Errorf("invalid group key %q: %w", s, err)
	}
	parts := strings.Split(string(raw), "\xff")
	if len(raw) == 0 || len(parts)%2 != 0 {
		return store.GroupKey{}, fmt.Errorf("invalid group key %q: not a list of label pairs", s)
	}
	m := make(map[string]string, len(parts)/2)
	for i := 0; i < len(parts); i += 2 {
		m[parts[i]] = parts[i+1]
	}
	return store.NewGroupKey(m), nil
}

// deletePath returns the push-API path that deletes the group, relative to
// the prefix: metrics/job@base64/<job>{/<name>@base64/<value>}. Every value
// is base64url with padding, and an empty value is "=", so any value works.
func deletePath(k store.GroupKey) string {
	enc := func(v string) string {
		if v == "" {
			return "="
		}
		return base64.URLEncoding.EncodeToString([]byte(v))
	}
	var b strings.Builder
	b.WriteString("metrics/job@base64/")
	b.WriteString(enc(k.Job()))
	for _, l := range k.Labels() {
		if l.Name == "job" {
			continue
		}
		b.WriteString("/")
		b.WriteString(url.PathEscape(l.Name))
		b.WriteString("@base64/")
		b.WriteString(enc(l.Value))
	}
	return b.String()
}

// formatTime renders t for a page, in UTC to the second.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// humanAge renders how long ago something happened: "42 s ago", "5 min
// ago", "3 h ago", "12 d ago".
func humanAge(d time.Duration) string {
	switch {
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%d s ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%d d ago", int(d/(24*time.Hour)))
}

// indexQuery is the parsed query of the index page.
type indexQuery struct {
	Q         string
	Sort      string // key, age (oldest first) or recent (newest first)
	Stale     string // the threshold as entered
	StaleOnly bool
	Page      int
	PerPage   int

	staleAfter time.Duration
	matchers   []labelmatch.Matcher // when Q parses as matchers
	terms      []string             // otherwise: lower-case substrings, all required
}

// parseIndexQuery reads the index page's parameters. Bad values are
// reported in the page, not as an error status: the user fixes the form.
func parseIndexQuery(v url.Values) (indexQuery, []string) {
	var problems []string
	q := indexQuery{
		Q:         strings.TrimSpace(v.Get("q")),
		Sort:      v.Get("sort"),
		Stale:     strings.TrimSpace(v.Get("stale")),
		StaleOnly: v.Get("stale_only") != "",
		Page:      1,
		PerPage:   defaultPerPage,
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
			q.staleAfter = d
		}
	}
	if q.StaleOnly && q.staleAfter == 0 {
		q.StaleOnly = false
	}
	if q.Q != "" {
		if ms, err := labelmatch.Parse(q.Q); err == nil {
			q.matchers = ms
		} else if strings.ContainsAny(q.Q, "{}~\"") {
			// It looks like matcher syntax: say what is wrong with it,
			// then filter by text anyway.
			problems = append(problems, err.Error()+"; filtering by text instead")
		}
		if q.matchers == nil {
			q.terms = strings.Fields(strings.ToLower(q.Q))
		}
	}
	return q, problems
}

// matches reports whether the group key passes the text or matcher filter.
func (q indexQuery) matches(k store.GroupKey) bool {
	// The filter is one selector: the admin API's delete link sends it as
	// the one match[], which selects the same groups.
	if !matchesAll(q.matchers, k) {
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

// isStale reports whether a group's last successful push is older than the
// threshold (a group that never had one is stale), by the same rule as the
// admin API's older_than.
func (q indexQuery) isStale(g *store.Group, now time.Time) bool {
	if q.staleAfter == 0 {
		return false
	}
	pt := g.PushTime()
	return pt.IsZero() || pt.Before(now.Add(-q.staleAfter))
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
	q, problems := parseIndexQuery(r.URL.Query())
	meta := h.meta("Groups")
	all := h.store().Groups()
	page := indexPage{pageMeta: meta, Query: q, Problems: problems, Total: len(all)}

	matched := all[:0:0]
	for _, g := range all {
		if !q.matches(g.Key()) {
			continue
		}
		stale := q.isStale(g, now)
		if stale {
			page.StaleCount++
		}
		if q.StaleOnly && !stale {
			continue
		}
		matched = append(matched, g)
	}
	page.Matched = len(matched)
	sortGroupsByKey(matched)
	switch q.Sort {
	case "age": // oldest successful push first; never pushed first of all
		sort.SliceStable(matched, func(i, j int) bool { return matched[i].PushTime().Before(matched[j].PushTime()) })
	case "recent":
		sort.SliceStable(matched, func(i, j int) bool { return matched[i].PushTime().After(matched[j].PushTime()) })
	}

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
			Stale:    q.isStale(g, now),
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
		case q.Q == "" || q.matchers != nil:
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
	page.DeletePath = deletePath(key)
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

// statusPage is the data of the status template.
type statusPage struct {
	pageMeta
	StartTime string
	Uptime    string
	Build     []stringPair
	Flags     []stringPair
	Stats     store.Stats
	Storage   *storageView
}

// storageView is the persistence state, formatted.
type storageView struct {
	Backend        string
	Path           string
	FileSize       string
	LiveSize       string
	LastCompaction string
	Compactions    uint64
	Syncs          uint64
	Endpoints      string
	Leader         string
	Role           string
	Applied        uint64
	Committed      uint64
	Lag            uint64
	Rebuilds       uint64
	Error          string
}

// uiStatus serves the status page: build information, start time, flags,
// store size and persistence state.
func (h *Handler) uiStatus(w http.ResponseWriter, r *http.Request) {
	page := statusPage{pageMeta: h.meta("Status"), Stats: h.store().Stats()}
	page.StartTime = formatTime(h.opts.StartTime)
	if !h.opts.StartTime.IsZero() {
		page.Uptime = time.Since(h.opts.StartTime).Round(time.Second).String()
	}
	bi := h.buildInformation()
	for _, k := range []string{"version", "revision", "branch", "buildUser", "buildDate", "goVersion"} {
		page.Build = append(page.Build, stringPair{k, bi[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(h.opts.Flags)) {
		page.Flags = append(page.Flags, stringPair{k, h.opts.Flags[k]})
	}
	if h.opts.Storage != nil {
		st := h.opts.Storage()
		sv := &storageView{
			Backend:        st.Backend,
			Path:           st.Path,
			FileSize:       formatBytes(st.FileBytes),
			LiveSize:       formatBytes(st.LiveBytes),
			LastCompaction: formatTime(st.LastCompaction),
			Compactions:    st.Compactions,
			Syncs:          st.Syncs,
			Endpoints:      strings.Join(st.Endpoints, ", "),
			Leader:         st.Leader,
			Applied:        st.Applied,
			Committed:      max(st.Committed, st.Applied),
			Rebuilds:       st.Rebuilds,
		}
		sv.Lag = sv.Committed - sv.Applied
		switch {
		case st.Leading:
			sv.Role = "leader: takes writes"
		case st.Ready:
			sv.Role = "follower: forwards writes to the leader"
		default:
			sv.Role = "loading: serves nothing until current"
		}
		if st.Err != nil {
			sv.Error = st.Err.Error()
		}
		page.Storage = sv
	}
	h.render(w, r, http.StatusOK, h.ui.status, page)
}

// formatBytes renders a size in bytes with a binary unit.
func formatBytes(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	v := float64(n)
	i := -1
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) + " " + units[i]
}

// errNoStaticFile is returned for an unknown static file.
var errNoStaticFile = errors.New("no such static file")

// uiStatic serves an embedded static file (GET <prefix>/static/<file>).
// With the current ?v= version in the URL the file may be cached for good;
// otherwise it is revalidated by ETag.
func (h *Handler) uiStatic(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Path
	if i := strings.LastIndex(name, "/static/"); i >= 0 {
		name = name[i+len("/static/"):]
	}
	f, ok := h.ui.static[name]
	if !ok {
		http.Error(w, fmt.Sprintf("%v: %q", errNoStaticFile, name), http.StatusNotFound)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", f.contentType)
	hd.Set("ETag", f.etag)
	hd.Set("X-Content-Type-Options", "nosniff")
	if r.URL.Query().Get("v") == h.ui.version {
		hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hd.Set("Cache-Control", "no-cache")
	}
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Length", strconv.Itoa(len(f.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(f.body)
	}
}
