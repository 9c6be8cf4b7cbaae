package web

// Access control by the permission file (--web.permissions-file, package
// access). Without the file every check here passes and nothing changes.
// With it:
//
//   - PUT, POST and DELETE on a group need a credential whose push
//     selectors match the group's grouping labels (admin: any group);
//   - scrapes, /api/v1/status, /api/v1/metrics and the UI need a credential
//     with read (or admin) when read_requires_auth is set;
//   - the admin API, /-/quit, /-/reload and pprof need an admin credential;
//   - /-/healthy, /-/ready and CORS preflights stay open.
//
// No credential or a wrong one answers 401 with WWW-Authenticate; a valid
// credential without the permission answers 403 naming it. Both are checked
// before the body is read, so a rejected request never reaches the store.
// exporter-toolkit's basic_auth_users, when also configured, has already
// checked the same Authorization header before the request gets here.

import (
	"fmt"
	"net/http"

	"github.com/pushgate/pushgate/access"
	"github.com/pushgate/pushgate/groupkey"
)

// policy returns the permission policy in force, or nil when there is no
// permission file. A request calls it once, so a reload in the middle of a
// request cannot change the rules it is judged by.
func (h *Handler) policy() *access.Policy {
	if h.opts.Permissions == nil {
		return nil
	}
	return h.opts.Permissions.Policy()
}

// authenticate returns the request's credential under p, or answers 401
// with the challenges the file supports and returns false.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request, p *access.Policy, handler string) (*access.Credential, bool) {
	c, err := p.Authenticate(r)
	if err != nil {
		for _, ch := range p.Challenges() {
			w.Header().Add("WWW-Authenticate", ch)
		}
		h.fail(w, handler, "unauthenticated", http.StatusUnauthorized, err)
		return nil, false
	}
	return c, true
}

// guard lets fn run when there is no permission file, when open says the
// policy leaves the request open, or when allow accepts the request's
// credential; otherwise it answers 401 (no or a wrong credential) or 403
// (allow's reason).
func (h *Handler) guard(handler string, open func(*access.Policy) bool, allow func(*access.Credential) error, fn http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := h.policy()
		if p == nil || open(p) {
			fn(w, r)
			return
		}
		c, ok := h.authenticate(w, r, p, handler)
		if !ok {
			return
		}
		if err := allow(c); err != nil {
			h.fail(w, handler, "forbidden", http.StatusForbidden, err)
			return
		}
		fn(w, r)
	}
}

// neverOpen is guard's open for requests that always need a credential
// under a permission file.
func neverOpen(*access.Policy) bool { return false }

// requirePush lets fn run only when the request's credential may write to
// the group named by rest (the escaped grouping path). A path that does not
// parse is left to fn, which answers 400 for it.
func (h *Handler) requirePush(handler, rest string, fn http.HandlerFunc) http.HandlerFunc {
	return h.guard(handler, neverOpen, func(c *access.Credential) error {
		// Parsing the path twice (here and in fn) costs ~1 µs; it keeps
		// the push handler unaware of permissions.
		labels, err := ParseGroupingPath(rest, GroupingPathOptions{UTF8Names: h.opts.UTF8Names})
		if err == nil && !c.MayPush(labels) {
			return fmt.Errorf("credential %q may not write to group %s", c.Name(), groupkey.New(labels))
		}
		return nil
	}, fn)
}

// requireRead lets fn run only when reading is open or the request's
// credential may read.
func (h *Handler) requireRead(handler string, fn http.HandlerFunc) http.HandlerFunc {
	open := func(p *access.Policy) bool { return !p.ReadRequiresAuth() }
	return h.guard(handler, open, func(c *access.Credential) error {
		if !c.MayRead() {
			return fmt.Errorf("credential %q may not read", c.Name())
		}
		return nil
	}, fn)
}

// requireAdmin lets fn run only when there is no permission file or the
// request's credential is an admin.
func (h *Handler) requireAdmin(handler string, fn http.HandlerFunc) http.HandlerFunc {
	return h.guard(handler, neverOpen, func(c *access.Credential) error {
		if !c.IsAdmin() {
			return fmt.Errorf("credential %q is not an admin", c.Name())
		}
		return nil
	}, fn)
}
