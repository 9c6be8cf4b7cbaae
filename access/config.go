package access

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v2"
	"golang.org/x/crypto/bcrypt"

	"github.com/pushgate/pushgate/labelmatch"
)

// fileConfig is the permission file as written.
type fileConfig struct {
	ReadRequiresAuth bool               `yaml:"read_requires_auth"`
	Credentials      []credentialConfig `yaml:"credentials"`
}

// credentialConfig is one credential as written in the file.
type credentialConfig struct {
	Name            string           `yaml:"name"`
	BasicAuth       *basicAuthConfig `yaml:"basic_auth"`
	BearerTokenHash string           `yaml:"bearer_token_hash"`
	Push            []string         `yaml:"push"`
	Read            bool             `yaml:"read"`
	Admin           bool             `yaml:"admin"`
}

// basicAuthConfig is a credential's user name and bcrypt password hash.
type basicAuthConfig struct {
	Username     string `yaml:"username"`
	PasswordHash string `yaml:"password_hash"`
}

// parse reads a permission file's content into a Policy whose password
// checks share cache (across reloads). Unknown fields, a missing or
// duplicate name or user name, a credential with both or neither of
// basic_auth and bearer_token_hash, a hash that is not bcrypt and a
// selector that does not parse are errors naming the credential and field.
// A file without credentials is an error too: it would lock everyone out,
// and is more likely a truncated file than an intent.
func parse(data []byte, cache *verifiedCache) (*Policy, error) {
	var fc fileConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.SetStrict(true)
	if err := dec.Decode(&fc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("parse YAML: %w", err)
	}
	if len(fc.Credentials) == 0 {
		return nil, errors.New("no credentials: a permission file must grant something to someone")
	}
	p := &Policy{
		readRequiresAuth: fc.ReadRequiresAuth,
		byUsername:       map[string]*Credential{},
		cache:            cache,
	}
	names := map[string]bool{}
	for i, cc := range fc.Credentials {
		if cc.Name == "" {
			return nil, fmt.Errorf("credentials[%d]: name is required", i)
		}
		if names[cc.Name] {
			return nil, fmt.Errorf("credential %q: name: used by another credential", cc.Name)
		}
		names[cc.Name] = true
		c, err := newCredential(cc)
		if err != nil {
			return nil, fmt.Errorf("credential %q: %w", cc.Name, err)
		}
		if c.username != "" {
			if other, ok := p.byUsername[c.username]; ok {
				return nil, fmt.Errorf("credential %q: basic_auth.username: %q is already used by credential %q", cc.Name, c.username, other.name)
			}
			p.byUsername[c.username] = c
		} else {
			p.bearer = append(p.bearer, c)
		}
	}
	return p, nil
}

// newCredential checks one credential and compiles its selectors.
func newCredential(cc credentialConfig) (*Credential, error) {
	c := &Credential{name: cc.Name, read: cc.Read, admin: cc.Admin}
	switch {
	case cc.BasicAuth != nil && cc.BearerTokenHash != "":
		return nil, errors.New("basic_auth and bearer_token_hash: give exactly one, not both")
	case cc.BasicAuth != nil:
		if cc.BasicAuth.Username == "" {
			return nil, errors.New("basic_auth.username: required")
		}
		if err := checkHash(cc.BasicAuth.PasswordHash); err != nil {
			return nil, fmt.Errorf("basic_auth.password_hash: %w", err)
		}
		c.username, c.hash = cc.BasicAuth.Username, []byte(cc.BasicAuth.PasswordHash)
	case cc.BearerTokenHash != "":
		if err := checkHash(cc.BearerTokenHash); err != nil {
			return nil, fmt.Errorf("bearer_token_hash: %w", err)
		}
		c.hash = []byte(cc.BearerTokenHash)
	default:
		return nil, errors.New("basic_auth or bearer_token_hash: one is required")
	}
	for i, s := range cc.Push {
		ms, err := labelmatch.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("push[%d]: %w", i, err)
		}
		c.push = append(c.push, ms)
	}
	return c, nil
}

// checkHash makes sure h is a bcrypt hash, so that a typo in the file is
// found at load time and not as a mysterious 401.
func checkHash(h string) error {
	if h == "" {
		return errors.New("required (a bcrypt hash)")
	}
	if _, err := bcrypt.Cost([]byte(h)); err != nil {
		return fmt.Errorf("not a bcrypt hash: %w", err)
	}
	return nil
}
