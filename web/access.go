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

// permit reports whether the request may use rt; otherwise it answered 401
// (no or a wrong credential) or 403 (a credential without the permission).
// path is the route's path: for a push, the escaped grouping path, whose
// group the credential must be allowed to write. A grouping path that does
// not parse is left to the push handler, which answers 400 for it.
func (h *Handler) permit(w http.ResponseWriter, r *http.Request, rt *route, path string) bool {
	p := h.policy()
	if p == nil || rt.permission == openToAll || rt.permission == readers && !p.ReadRequiresAuth() {
		return true
	}
	c, ok := h.authenticate(w, r, p, rt.name)
	if !ok {
		return false
	}
	var err error
	switch rt.permission {
	case readers:
		if !c.MayRead() {
			err = fmt.Errorf("credential %q may not read", c.Name())
		}
	case groupPushers:
		// Authenticated only: the groups are known once the body is
		// translated, and the handler checks each (otlpPermit).
	case pushers:
		// Parsing the path twice (here and in the push handler) costs
		// ~1 µs; it keeps the push handler unaware of permissions.
		key, perr := groupkey.ParsePath(path, groupkey.PathOptions{UTF8Names: h.opts.UTF8Names})
		if perr == nil && !c.MayPush(key.Map()) {
			err = fmt.Errorf("credential %q may not write to group %s", c.Name(), key)
		}
	case admins:
		if !c.IsAdmin() {
			err = fmt.Errorf("credential %q is not an admin", c.Name())
		}
	}
	if err != nil {
		h.fail(w, rt.name, "forbidden", http.StatusForbidden, err)
		return false
	}
	return true
}
