package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
)

// errNotLoopback is returned for any target or listen address that is not,
// or does not resolve only to, a loopback address. The tool generates load,
// so it refuses to aim it anywhere but the local machine.
var errNotLoopback = errors.New("not a loopback address (only 127.0.0.0/8 and ::1 are allowed)")

// lookupFunc resolves a host name to addresses; net.Resolver.LookupIPAddr
// in production, a fake in tests.
type lookupFunc func(ctx context.Context, host string) ([]net.IPAddr, error)

// parseTarget parses a gateway base URL and checks that its host resolves
// only to loopback addresses. It returns the URL without a trailing slash.
func parseTarget(ctx context.Context, raw string, lookup lookupFunc) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("parse target URL %q: %w", raw, err)
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("target URL %q: scheme must be http", raw)
	}
	if u.User != nil {
		return nil, fmt.Errorf("target URL %q: credentials in the URL are not supported", raw)
	}
	if err := checkLoopbackHost(ctx, u.Hostname(), lookup); err != nil {
		return nil, fmt.Errorf("target URL %q: %w", raw, err)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	return u, nil
}

// checkListenAddress checks that a host:port listen address names a
// loopback host; an empty host (all interfaces) is refused.
func checkListenAddress(ctx context.Context, addr string, lookup lookupFunc) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if err := checkLoopbackHost(ctx, host, lookup); err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	return nil
}

// checkLoopbackHost resolves host and refuses it unless every address it
// resolves to is a loopback address.
func checkLoopbackHost(ctx context.Context, host string, lookup lookupFunc) error {
	if host == "" {
		return fmt.Errorf("empty host: %w", errNotLoopback)
	}
	if ip := net.ParseIP(host); ip != nil {
		if !ip.IsLoopback() {
			return fmt.Errorf("%s: %w", host, errNotLoopback)
		}
		return nil
	}
	addrs, err := lookup(ctx, host)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return fmt.Errorf("resolve %s: no addresses: %w", host, errNotLoopback)
	}
	for _, a := range addrs {
		if !a.IP.IsLoopback() {
			return fmt.Errorf("%s resolves to %s: %w", host, a.IP, errNotLoopback)
		}
	}
	return nil
}

// dialControl is a net.Dialer Control hook that refuses, at connect time,
// any address that is not loopback: a second line of defence in case a name
// resolves differently after the up-front check.
func dialControl(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("dial %q: %w", address, err)
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("dial %s: %w", address, errNotLoopback)
	}
	return nil
}
