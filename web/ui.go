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
//
// This file holds what every page shares: the embedded assets, the layout
// data, rendering, label badges, times and the static files. Each page has
// its own file: ui_index.go, ui_group.go, ui_status.go.

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
)

//go:embed ui/templates/*.html ui/static/*
var uiFiles embed.FS

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
	return exposition.QuoteLabelName(b.Name) + "=" + strconv.Quote(b.Value)
}

// badges orders labels for display: job first, instance second, the rest by
// name.
func badges(labels []groupkey.Label) []labelBadge {
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
