package etcdlog

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"strings"
	"time"
)

// Defaults for the zero fields of Config.
const (
	DefaultPrefix         = "/pushgate/"
	DefaultLeaseTTL       = 5 * time.Second
	DefaultDialTimeout    = 5 * time.Second
	DefaultRequestTimeout = 5 * time.Second
	DefaultCommitLinger   = 2 * time.Millisecond
)

// Config configures Open.
type Config struct {
	// Endpoints are the etcd client URLs (https://etcd-0:2379, ...).
	Endpoints []string
	// Prefix namespaces every key, so that several gateways can share one
	// etcd. Default DefaultPrefix; a missing trailing "/" is added.
	Prefix string
	// TLS configures the client connections; nil means plain text.
	TLS *tls.Config
	// Username and Password authenticate to etcd when Username is set.
	Username, Password string
	// LeaseTTL is the election session's lease TTL: how long a leader that
	// lost etcd keeps its leadership at most, and how long writes pause
	// when a leader dies. It is rounded up to whole seconds. Default
	// DefaultLeaseTTL.
	LeaseTTL time.Duration
	// AdvertiseURL is the URL other replicas use to reach this one: the
	// value of its election key, which Leader returns.
	AdvertiseURL string
	// Meta holds the settings every replica sharing the prefix must agree
	// on; Open refuses to join a cluster whose meta key differs.
	Meta Meta
	// Logger receives the Log's messages and the etcd client's warnings.
	// Nil discards them.
	Logger *slog.Logger
	// DialTimeout bounds connecting to etcd. Default DefaultDialTimeout.
	DialTimeout time.Duration
	// RequestTimeout bounds each request to etcd, commits included. A
	// commit is sent in attempts of at most a second each within it, to
	// another member when one does not answer, and fails with ErrAmbiguous
	// when none told its outcome within it. Default DefaultRequestTimeout.
	RequestTimeout time.Duration
	// CommitLinger is how long the committer waits at most, once a commit
	// finished with fewer entries queued than were outstanding, for the
	// appenders it released to append again, so that their entries share
	// the next transaction with those queued meanwhile (fewer transactions
	// for the same pushes); never longer than the last commit took.
	// Default DefaultCommitLinger; negative: no wait.
	CommitLinger time.Duration
}

// withDefaults returns c with its zero fields set to the defaults, or an
// error for a configuration that cannot work.
func (c Config) withDefaults() (Config, error) {
	if len(c.Endpoints) == 0 {
		return c, errors.New("no etcd endpoints")
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if !strings.HasSuffix(c.Prefix, "/") {
		c.Prefix += "/"
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	switch {
	case c.CommitLinger == 0:
		c.CommitLinger = DefaultCommitLinger
	case c.CommitLinger < 0:
		c.CommitLinger = 0
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// leaseSeconds returns the lease TTL in whole seconds, rounded up.
func (c Config) leaseSeconds() int64 {
	return int64((c.LeaseTTL + time.Second - 1) / time.Second)
}

// keys are the etcd keys of one prefix.
type keys struct {
	groups   string // prefix of the group keys
	head     string
	election string // the election's prefix, without its trailing "/"
	meta     string
}

func keysFor(prefix string) keys {
	return keys{
		groups:   prefix + "groups/",
		head:     prefix + "head",
		election: prefix + "leader",
		meta:     prefix + "meta",
	}
}
