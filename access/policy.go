// Package access holds pushgate's permission file: which credential
// (a bcrypt-hashed basic-auth user or bearer token) may push to which
// groups, read the metrics and API, or use the admin endpoints. A Policy is
// one parsed file and never changes; a PolicyFile holds the current Policy
// and swaps it atomically on Reload, so requests in flight keep the policy
// they started with.
package access

import (
	"errors"
	"net/http"
	"strings"

	"golang.org/x/crypto/bcrypt"

	"github.com/pushgate/pushgate/labelmatch"
)

// Errors returned by Policy.Authenticate. Both answer 401.
var (
	// ErrNoCredential means the request carried no Authorization header.
	ErrNoCredential = errors.New("authentication required: send basic auth or a bearer token")
	// ErrBadCredential means the credential was unknown or wrong. The
	// message does not say which, so user names cannot be probed.
	ErrBadCredential = errors.New("wrong user name, password or token")
)

// timingDummyHash is checked against the password of an unknown user name,
// so that such a request costs as long as a wrong password for a known one
// and user names cannot be found by timing. It is bcrypt (cost 10) of a
// string nobody uses.
const timingDummyHash = "$2a$10$QqR02reNt3IT5gG95wtYSOzZxjs8LKIgXqTaY3vHWO5ytSxmlqjf2"

// Policy is one parsed permission file. It is immutable and safe for
// concurrent use.
type Policy struct {
	readRequiresAuth bool
	byUsername       map[string]*Credential
	bearer           []*Credential
	cache            *verifiedCache
}

// ReadRequiresAuth reports whether reading (scrapes, the API's read
// endpoints and the UI) needs a credential with read permission.
func (p *Policy) ReadRequiresAuth() bool { return p.readRequiresAuth }

// Challenges returns the WWW-Authenticate challenges a 401 should carry:
// Basic when the file has basic-auth users (so browsers prompt for them),
// Bearer when it has tokens.
func (p *Policy) Challenges() []string {
	var out []string
	if len(p.byUsername) > 0 {
		out = append(out, `Basic realm="pushgate", charset="UTF-8"`)
	}
	if len(p.bearer) > 0 {
		out = append(out, `Bearer realm="pushgate"`)
	}
	return out
}

// Authenticate returns the credential r carries in its Authorization
// header: basic auth or "Bearer <token>". It returns ErrNoCredential when
// there is none and ErrBadCredential when it matches no credential. The
// first check of a secret costs one bcrypt comparison (per bearer credential
// for tokens); later checks of the same secret hit a cache.
func (p *Policy) Authenticate(r *http.Request) (*Credential, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, ErrNoCredential
	}
	if user, pass, ok := r.BasicAuth(); ok {
		c, known := p.byUsername[user]
		if !known {
			_ = bcrypt.CompareHashAndPassword([]byte(timingDummyHash), []byte(pass))
			return nil, ErrBadCredential
		}
		if !p.cache.verify(c.name, c.hash, pass) {
			return nil, ErrBadCredential
		}
		return c, nil
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, ErrBadCredential
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return nil, ErrBadCredential
	}
	for _, c := range p.bearer {
		if p.cache.verify(c.name, c.hash, token) {
			return c, nil
		}
	}
	return nil, ErrBadCredential
}

// Credential is one entry of the permission file.
type Credential struct {
	name     string
	username string // "" for a bearer token
	hash     []byte
	push     [][]labelmatch.Matcher
	read     bool
	admin    bool
}

// Name is the credential's name from the file, safe to log.
func (c *Credential) Name() string { return c.name }

// MayPush reports whether c may replace, merge into or delete the group
// with the grouping labels labels (job included): an admin may push
// anywhere, anyone else where any of their push selectors matches. A label
// absent from the group matches as "".
func (c *Credential) MayPush(labels map[string]string) bool {
	if c.admin {
		return true
	}
	for _, sel := range c.push {
		if labelmatch.MatchLabels(sel, labels) {
			return true
		}
	}
	return false
}

// MayRead reports whether c may read metrics, the API and the UI.
func (c *Credential) MayRead() bool { return c.read || c.admin }

// IsAdmin reports whether c may use the admin endpoints.
func (c *Credential) IsAdmin() bool { return c.admin }

// credentialCount returns the number of credentials, for logs.
func (p *Policy) credentialCount() int { return len(p.byUsername) + len(p.bearer) }
