package web

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/store"
)

// uiGet fetches a UI page and requires the status.
func uiGet(t *testing.T, h http.Handler, target string, want int) string {
	t.Helper()
	rec := apiDo(h, http.MethodGet, target)
	if rec.Code != want {
		t.Fatalf("GET %s = %d, want %d\n%.500s", target, rec.Code, want, rec.Body)
	}
	if want < 300 && !strings.Contains(target, "/static/") {
		if ct := rec.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Fatalf("GET %s: Content-Type %q", target, ct)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Fatalf("GET %s: Content-Security-Policy %q", target, csp)
		}
	}
	return rec.Body.String()
}

// uiRows returns the job badges of the index table's rows, in order.
func uiRows(page string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<span class="b job">job=&#34;([^&]*)&#34;</span>`).FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

func requireContains(t *testing.T, page string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(page, w) {
			t.Errorf("page lacks %q", w)
		}
	}
}

func requireNotContains(t *testing.T, page string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(page, w) {
			t.Errorf("page contains %q", w)
		}
	}
}

func TestUIIndexListsGroupsWithAgeFailureAndSeries(t *testing.T) {
	h, _ := adminFixture(t, false)
	page := uiGet(t, h, "/", http.StatusOK)
	if got := strings.Join(uiRows(page), ","); got != "ancient,backup-fresh,backup-old,never" {
		t.Fatalf("rows %s", got)
	}
	requireContains(t, page,
		`<span class="b instance">instance=&#34;x&#34;</span>`,
		"1 min ago", "3 h ago", "3 d ago",
		`<span class="failed" title="pushed metrics must not have timestamps: metric &#34;d&#34; has one">last push failed</span>`,
		`<td class="n">4</td>`, // ancient: b, c and the two timestamps
		`href="/group?key=`,
		`href="/static/ui.css?v=`,
		`groups 1–4 of 4, page 1 of 1`,
	)
	requireNotContains(t, page, `data-action="wipe"`, `data-action="delete-stale"`)
}

func TestUIIndexEscapesLabelValues(t *testing.T) {
	h, st := apiTestHandler(t)
	apiPushText(t, st, time.Now(), "a 1\n", "job", "<script>alert(1)</script>", "x", `"><img src=x onerror=alert(2)>`)
	for _, target := range []string{"/", "/?q=" + url.QueryEscape("<script>"), "/group?key=" + encodeGroupParam(st.Groups()[0].Key())} {
		page := uiGet(t, h, target, http.StatusOK)
		requireNotContains(t, page, "<script>alert", "<img src=x")
		requireContains(t, page, "&lt;script&gt;alert(1)&lt;/script&gt;")
	}
}

func TestUIIndexFilters(t *testing.T) {
	h, _ := adminFixture(t, false)
	for _, tc := range []struct {
		name, q, want string
	}{
		{"substring of a value", "backup", "backup-fresh,backup-old"},
		{"name=value text", "instance=x", "backup-old"},
		{"case-insensitive", "ANCIENT", "ancient"},
		{"all terms required", "backup old", "backup-old"},
		{"label matcher", `job=~".*c.*"`, "ancient,backup-fresh,backup-old"},
		{"selector", `{job=~"backup-.*",instance=""}`, "backup-fresh"},
		{"nothing", "zzz", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page := uiGet(t, h, "/?q="+url.QueryEscape(tc.q), http.StatusOK)
			if got := strings.Join(uiRows(page), ","); got != tc.want {
				t.Fatalf("rows %q, want %q", got, tc.want)
			}
			if tc.want == "" {
				requireContains(t, page, "No group matches.")
			}
		})
	}
	page := uiGet(t, h, "/?q="+url.QueryEscape(`job=~"("`), http.StatusOK)
	requireContains(t, page, `class="problem"`, "bad regular expression")
}

func TestUIIndexSortsByAge(t *testing.T) {
	h, _ := adminFixture(t, false)
	for _, tc := range []struct{ sort, want string }{
		{"key", "ancient,backup-fresh,backup-old,never"},
		{"age", "never,ancient,backup-old,backup-fresh"},
		{"recent", "backup-fresh,backup-old,ancient,never"},
	} {
		if got := strings.Join(uiRows(uiGet(t, h, "/?sort="+tc.sort, http.StatusOK)), ","); got != tc.want {
			t.Errorf("sort=%s: rows %s, want %s", tc.sort, got, tc.want)
		}
	}
}

func TestUIIndexSortsGroupsOfOneAgeByKey(t *testing.T) {
	h, st := apiTestHandler(t)
	// Pushed at one instant, in an order that is neither the natural nor
	// the canonical ID order.
	for _, job := range []string{"db2", "db10", "db1"} {
		apiPushText(t, st, apiT0, "a 1\n", "job", job)
	}
	for _, sort := range []string{"key", "age", "recent"} {
		if got := strings.Join(uiRows(uiGet(t, h, "/?sort="+sort, http.StatusOK)), ","); got != "db1,db2,db10" {
			t.Errorf("sort=%s: rows %s, want db1,db2,db10", sort, got)
		}
	}
}

func TestUIIndexHighlightsAndOffersToDeleteStaleGroups(t *testing.T) {
	h, _ := adminFixture(t, true)
	page := uiGet(t, h, "/?stale=2h", http.StatusOK)
	if n := strings.Count(page, `<tr class="stale">`); n != 3 {
		t.Errorf("%d stale rows, want 3 (backup-old, ancient, never)", n)
	}
	requireContains(t, page, "3 stale (no successful push for 2h)",
		`data-action="delete-stale" data-query="older_than=2h"`,
		`Delete the 3 stale groups`,
		`data-action="wipe" data-count="4"`)

	page = uiGet(t, h, "/?stale=2h&stale_only=1&q="+url.QueryEscape(`job=~"backup.*"`), http.StatusOK)
	if got := strings.Join(uiRows(page), ","); got != "backup-old" {
		t.Errorf("stale_only rows %s, want backup-old", got)
	}
	requireContains(t, page, `data-query="match%5B%5D=job%3D~%22backup.%2A%22&amp;older_than=2h"`)

	page = uiGet(t, h, "/?stale=2h&q=backup", http.StatusOK)
	requireNotContains(t, page, `data-action="delete-stale"`)
	requireContains(t, page, "filter with label matchers")

	page = uiGet(t, h, "/?stale=soon", http.StatusOK)
	requireContains(t, page, `invalid stale threshold &#34;soon&#34;`)
}

func TestUIIndexPages(t *testing.T) {
	h, st := apiTestHandler(t)
	now := time.Now()
	for i := 0; i < 25; i++ {
		apiPushText(t, st, now, "a 1\n", "job", fmt.Sprintf("j%02d", i))
	}
	page := uiGet(t, h, "/?per_page=10", http.StatusOK)
	if got := uiRows(page); len(got) != 10 || got[0] != "j00" {
		t.Fatalf("page 1 rows %v", got)
	}
	requireContains(t, page, "groups 1–10 of 25, page 1 of 3", `href="/?page=2&amp;per_page=10" rel="next"`)
	requireNotContains(t, page, `rel="prev"`)

	page = uiGet(t, h, "/?per_page=10&page=3", http.StatusOK)
	if got := uiRows(page); len(got) != 5 || got[0] != "j20" {
		t.Fatalf("page 3 rows %v", got)
	}
	requireContains(t, page, "groups 21–25 of 25, page 3 of 3", `href="/?page=2&amp;per_page=10" rel="prev"`)
	requireNotContains(t, page, `rel="next"`)

	// A page past the end shows the last page.
	if got := uiRows(uiGet(t, h, "/?per_page=10&page=99", http.StatusOK)); len(got) != 5 {
		t.Fatalf("page 99 rows %v", got)
	}
	// The default is 100 per page.
	if got := uiRows(uiGet(t, h, "/", http.StatusOK)); len(got) != 25 {
		t.Fatalf("default page rows %d", len(got))
	}
}

func TestUIIndexAt10000GroupsIsSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 10,000 groups")
	}
	h, st := apiTestHandler(t)
	now := time.Now()
	fams := func() []*dto.MetricFamily {
		return mustDecodeText(t, "# TYPE job_duration_seconds gauge\njob_duration_seconds 12.5\n# TYPE job_last_success gauge\njob_last_success 1.7e9\n")
	}
	for i := 0; i < 10000; i++ {
		apiPush(t, st, now.Add(-time.Duration(i)*time.Minute), fams(), "job", fmt.Sprintf("batch-%04d", i%500), "instance", fmt.Sprintf("host-%05d.example.org", i))
	}
	start := time.Now()
	page := uiGet(t, h, "/?stale=1d", http.StatusOK)
	elapsed := time.Since(start)
	if n := len(uiRows(page)); n != 100 {
		t.Fatalf("%d rows, want 100", n)
	}
	t.Logf("first screen at 10,000 groups: %d bytes in %v", len(page), elapsed)
	if len(page) > 100<<10 {
		t.Errorf("first screen is %d bytes, want < 100 KiB", len(page))
	}
	if elapsed > 2*time.Second { // generous: 2 shared cores, maybe -race
		t.Errorf("first screen took %v", elapsed)
	}
}

func TestUIGroupShowsEveryFamilyAndSeries(t *testing.T) {
	h, st := apiTestHandler(t, func(o *Options) { o.RoutePrefix = "/pg" })
	apiPushText(t, st, apiT0, `# HELP rpc_seconds RPC latency.
# TYPE rpc_seconds summary
rpc_seconds{quantile="0.99"} 0.3
rpc_seconds_sum 12.5
rpc_seconds_count 100
# TYPE size_bytes histogram
size_bytes_bucket{le="100"} 3
size_bytes_bucket{le="+Inf"} 8
size_bytes_sum 4500
size_bytes_count 8
# HELP requests_total Requests <by code>.
# TYPE requests_total counter
requests_total{code="200"} 1027
`, "job", "batch", "path", "/var/tmp", "empty", "")
	apiPush(t, st, apiT0, []*dto.MetricFamily{nativeHistogramFamily()}, "job", "native")

	key := groupkey.New(map[string]string{"job": "batch", "path": "/var/tmp", "empty": ""})
	page := uiGet(t, h, "/pg/group?key="+encodeGroupParam(key), http.StatusOK)
	requireContains(t, page,
		`<span class="b job">job=&#34;batch&#34;</span>`,
		`<span class="b">empty=&#34;&#34;</span>`,
		`<h2>rpc_seconds <span class="t">SUMMARY</span></h2>`,
		`<p class="help">RPC latency.</p>`,
		`<tr><td>0.99</td><td>0.3</td></tr>`, "count 100, sum 12.5",
		`<tr><td>≤ 100</td><td>3</td></tr>`, `<tr><td>≤ &#43;Inf</td><td>8</td></tr>`,
		`Requests &lt;by code&gt;.`, `<td class="v">1027</td>`,
		`<span class="b">code=&#34;200&#34;</span>`,
		`push_time_seconds`, `last pushed 2024-03-01 12:00:00 UTC`,
		// job@base64 "batch", empty value "=", "/var/tmp" base64url padded.
		`data-path="metrics/job@base64/YmF0Y2g=/empty@base64/=/path@base64/L3Zhci90bXA="`,
		`href="/pg/"`,
	)

	page = uiGet(t, h, "/pg/group?key="+encodeGroupParam(groupkey.New(map[string]string{"job": "native"})), http.StatusOK)
	requireContains(t, page, "native histogram, schema 0, zero threshold 0.001",
		"<tr><td>[-1, -0.5)</td><td>1</td></tr>",
		"<tr><td>[-0.001, 0.001]</td><td>4</td></tr>",
		"<tr><td>(16, 32]</td><td>1</td></tr>", "count 11, sum 27.5")
}

func TestUIGroupErrors(t *testing.T) {
	h, _ := apiTestHandler(t)
	page := uiGet(t, h, "/group?key="+encodeGroupParam(groupkey.New(map[string]string{"job": "gone"})), http.StatusNotFound)
	requireContains(t, page, "Group not found", `No group {job=&#34;gone&#34;}`)
	uiGet(t, h, "/group?key=***", http.StatusBadRequest)
	uiGet(t, h, "/group?key=", http.StatusBadRequest)
	uiGet(t, h, "/group?key=am9i", http.StatusBadRequest) // "job": odd number of parts
}

func TestUIGroupParamRoundTrips(t *testing.T) {
	for _, m := range []map[string]string{
		{"job": "a"},
		{"job": "a", "instance": ""},
		{"job": "a/b", "x": "ü?=&", "empty": ""},
	} {
		k := groupkey.New(m)
		got, err := decodeGroupParam(encodeGroupParam(k))
		if err != nil || got.ID() != k.ID() {
			t.Errorf("round trip of %v: %v, %v", m, got, err)
		}
	}
}

func TestUIStatusShowsBuildFlagsAndStorage(t *testing.T) {
	h, st := apiTestHandler(t, func(o *Options) {
		o.Storage = func() StorageStatus {
			return JournalStatus{Path: "/data/pushgate.journal", FileBytes: 3 << 20, LiveBytes: 1536, LastCompaction: apiT0, Compactions: 7, Syncs: 99}
		}
	})
	apiPushText(t, st, apiT0, "a 1\nb 2\n", "job", "x")
	page := uiGet(t, h, "/status", http.StatusOK)
	requireContains(t, page,
		"<tr><th>version</th><td>1.2.3</td></tr>",
		"<tr><th>revision</th><td>abc</td></tr>",
		"<tr><th>web.listen-address</th><td><code>:9091</code></td></tr>",
		"2024-03-01 12:00:00 UTC",
		"<code>/data/pushgate.journal</code>", "3 MiB", "1.5 KiB",
		"<tr><th>Compactions</th><td>7</td></tr>",
		"<tr><th>Groups</th><td>1</td></tr>",
	)

	h, _ = apiTestHandler(t)
	requireContains(t, uiGet(t, h, "/status", http.StatusOK), "In memory only")
}

func TestUIStaticFiles(t *testing.T) {
	h, _ := apiTestHandler(t)
	for _, tc := range []struct{ file, ctype, contains string }{
		{"ui.css", "text/css; charset=utf-8", ".groups"},
		{"ui.js", "text/javascript; charset=utf-8", "delete-group"},
		{"favicon.svg", "image/svg+xml", "<svg"},
	} {
		rec := apiDo(h, http.MethodGet, "/static/"+tc.file)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != tc.ctype || !strings.Contains(rec.Body.String(), tc.contains) {
			t.Errorf("%s: %d %q", tc.file, rec.Code, rec.Header().Get("Content-Type"))
		}
		if cc := rec.Header().Get("Cache-Control"); cc != "no-cache" {
			t.Errorf("%s without version: Cache-Control %q", tc.file, cc)
		}
		rec = apiDo(h, http.MethodGet, "/static/"+tc.file+"?v="+h.ui.version)
		if cc := rec.Header().Get("Cache-Control"); !strings.Contains(cc, "immutable") {
			t.Errorf("%s with version: Cache-Control %q", tc.file, cc)
		}
		req, _ := http.NewRequest(http.MethodGet, "/static/"+tc.file, nil)
		req.Header.Set("If-None-Match", rec.Header().Get("ETag"))
		rec2 := apiDo2(h, req)
		if rec2.Code != http.StatusNotModified {
			t.Errorf("%s revalidation: %d, want 304", tc.file, rec2.Code)
		}
	}
	if rec := apiDo(h, http.MethodGet, "/static/nope.js"); rec.Code != http.StatusNotFound {
		t.Errorf("unknown file: %d", rec.Code)
	}
}

func TestUILinksFollowTheExternalPath(t *testing.T) {
	h, st := apiTestHandler(t, func(o *Options) { o.RoutePrefix = "/pg"; o.ExternalPath = "/pg" })
	apiPushText(t, st, time.Now(), "a 1\n", "job", "x")
	page := uiGet(t, h, "/pg/", http.StatusOK)
	requireContains(t, page, `href="/pg/static/ui.css?v=`, `src="/pg/static/ui.js?v=`, `href="/pg/group?key=`,
		`href="/pg/status"`, `href="/pg/metrics"`, `data-base="/pg"`, `action="/pg/"`)
	uiGet(t, h, "/pg/static/ui.css", http.StatusOK)
	uiGet(t, h, "/pg/status", http.StatusOK)
}

func TestUIHumanAge(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "just now"},
		{42 * time.Second, "42 s ago"},
		{5*time.Minute + 59*time.Second, "5 min ago"},
		{3 * time.Hour, "3 h ago"},
		{47 * time.Hour, "47 h ago"},
		{50 * time.Hour, "2 d ago"},
	} {
		if got := humanAge(tc.d); got != tc.want {
			t.Errorf("humanAge(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// failPush pushes a body the store must reject to the group with the given
// labels and returns the reason the group keeps.
func failPush(t *testing.T, st *store.Store, at time.Time, body string, labels ...string) string {
	t.Helper()
	m := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		m[labels[i]] = labels[i+1]
	}
	key := groupkey.New(m)
	if _, err := st.Push(t.Context(), store.Push{Key: key, Method: store.Replace, Families: mustDecodeText(t, body), Time: at}); err == nil {
		t.Fatalf("push of %q to %v accepted", body, m)
	}
	reason := st.Group(key).FailureReason()
	if reason == "" {
		t.Fatalf("push to %v rejected without a reason", m)
	}
	return reason
}

func TestUIShowsTheReasonOfTheLastFailedPush(t *testing.T) {
	h, st := apiTestHandler(t)
	const hostile = `"><script>alert(1)</script>`
	apiPushText(t, st, apiT0, "x 1\n", "job", "failing")
	apiPushText(t, st, apiT0, "x 1\n", "job", "fine")
	body := fmt.Sprintf("x{v=%q} 1\nx{v=%q} 2\n", hostile, hostile) // a duplicate series, quoted in the reason
	reason := failPush(t, st, apiT0.Add(time.Second), body, "job", "failing")
	if !strings.Contains(reason, "<script>") {
		t.Fatalf("the reason %q does not quote the label value; the test needs one that does", reason)
	}
	titles := regexp.MustCompile(`<span class="failed" title="([^"]*)">last push failed</span>`)
	reasonRow := regexp.MustCompile(`<dt>Reason</dt><dd class="reason">([^<]*)</dd>`)
	failing := "/group?key=" + encodeGroupParam(groupkey.New(map[string]string{"job": "failing"}))
	fine := "/group?key=" + encodeGroupParam(groupkey.New(map[string]string{"job": "fine"}))

	index := uiGet(t, h, "/", http.StatusOK)
	requireNotContains(t, index, "<script>alert")
	if m := titles.FindAllStringSubmatch(index, -1); len(m) != 1 || html.UnescapeString(m[0][1]) != reason {
		t.Errorf("index: failed badges with a title %q, want one titled %q", m, reason)
	}
	page := uiGet(t, h, failing, http.StatusOK)
	requireNotContains(t, page, "<script>alert")
	if m := reasonRow.FindStringSubmatch(page); m == nil || html.UnescapeString(m[1]) != reason {
		t.Errorf("group page: reason row %q, want %q", m, reason)
	}
	requireNotContains(t, uiGet(t, h, fine, http.StatusOK), "<dt>Reason</dt>")

	// After a successful push the badge goes, and the reason stays with the
	// failure time on the group page.
	apiPushText(t, st, apiT0.Add(2*time.Second), "x 2\n", "job", "failing")
	requireNotContains(t, uiGet(t, h, "/", http.StatusOK), `class="failed"`)
	page = uiGet(t, h, failing, http.StatusOK)
	if m := reasonRow.FindStringSubmatch(page); m == nil || html.UnescapeString(m[1]) != reason {
		t.Errorf("group page after a successful push: reason row %q, want %q", m, reason)
	}
}
