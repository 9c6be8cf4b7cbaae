package main

import (
	"context"
	"errors"
	"net"
	"testing"
)

// fakeLookup resolves from a fixed table, so the tests need no DNS.
func fakeLookup(table map[string][]string) lookupFunc {
	return func(_ context.Context, host string) ([]net.IPAddr, error) {
		ips, ok := table[host]
		if !ok {
			return nil, errors.New("no such host")
		}
		var out []net.IPAddr
		for _, s := range ips {
			out = append(out, net.IPAddr{IP: net.ParseIP(s)})
		}
		return out, nil
	}
}

func TestParseTarget(t *testing.T) {
	lookup := fakeLookup(map[string][]string{
		"localhost":   {"127.0.0.1", "::1"},
		"example.com": {"93.184.215.14"},
		"rebind.test": {"127.0.0.1", "10.0.0.1"},
	})
	tests := []struct {
		name, url string
		ok        bool
	}{
		{"an IPv4 loopback address is accepted", "http://127.0.0.1:9091", true},
		{"any address in 127.0.0.0/8 is accepted", "http://127.3.2.1:9091/", true},
		{"the IPv6 loopback address is accepted", "http://[::1]:9091", true},
		{"a name resolving only to loopback is accepted", "http://localhost:9091", true},
		{"a private address is refused", "http://10.0.0.1:9091", false},
		{"the unspecified address is refused", "http://0.0.0.0:9091", false},
		{"a public name is refused", "http://example.com:9091", false},
		{"a name with one non-loopback address is refused", "http://rebind.test:9091", false},
		{"a name that does not resolve is refused", "http://nowhere.invalid:9091", false},
		{"https is refused", "https://127.0.0.1:9091", false},
		{"a URL without a host is refused", "http:///metrics", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := parseTarget(context.Background(), tt.url, lookup)
			if tt.ok && err != nil {
				t.Fatalf("parseTarget(%q) = %v, want success", tt.url, err)
			}
			if !tt.ok && err == nil {
				t.Fatalf("parseTarget(%q) = %v, want an error", tt.url, u)
			}
		})
	}
}

func TestParseTargetRefusesExampleComWithTheRealResolver(t *testing.T) {
	// Whether or not DNS works here, example.com must not be accepted.
	if _, err := parseTarget(context.Background(), "http://example.com:9091", net.DefaultResolver.LookupIPAddr); err == nil {
		t.Fatal("example.com was accepted")
	}
}

func TestCheckListenAddress(t *testing.T) {
	lookup := fakeLookup(map[string][]string{"localhost": {"127.0.0.1"}})
	tests := []struct {
		name, addr string
		ok         bool
	}{
		{"a loopback address is accepted", "127.0.0.1:19093", true},
		{"localhost is accepted", "localhost:0", true},
		{"all interfaces are refused", ":19093", false},
		{"a private address is refused", "10.0.0.1:19093", false},
		{"a missing port is refused", "127.0.0.1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkListenAddress(context.Background(), tt.addr, lookup)
			if (err == nil) != tt.ok {
				t.Fatalf("checkListenAddress(%q) = %v, want ok=%v", tt.addr, err, tt.ok)
			}
		})
	}
}

func TestDialControlRefusesNonLoopback(t *testing.T) {
	if err := dialControl("tcp", "127.0.0.1:80", nil); err != nil {
		t.Errorf("loopback dial refused: %v", err)
	}
	if err := dialControl("tcp", "10.0.0.1:80", nil); !errors.Is(err, errNotLoopback) {
		t.Errorf("dial to 10.0.0.1 = %v, want errNotLoopback", err)
	}
}
