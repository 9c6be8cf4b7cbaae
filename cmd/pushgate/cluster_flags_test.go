package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestClusterEndpointsAreCommaSeparatedOrRepeated(t *testing.T) {
	c, err := parseFlags([]string{"--cluster.etcd.endpoints=http://127.0.0.1:1,http://127.0.0.1:2", "--cluster.etcd.endpoints", " http://127.0.0.1:3 "})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"}
	if got := c.cluster.etcdEndpoints(); !slices.Equal(got, want) {
		t.Errorf("endpoints %q, want %q", got, want)
	}
	if c, err := parseFlags(nil); err != nil || c.cluster.enabled() {
		t.Errorf("without the flag cluster mode is %v (%v), want off", c.cluster.enabled(), err)
	}
}

func TestClusterFlagsRefuseWhatCannotWork(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a persistence file beside etcd", []string{"--persistence.file=/tmp/x"}, "exclude each other"},
		{"a certificate without its key", []string{"--cluster.etcd.cert-file=/c.pem"}, "go together"},
		{"a password without a user", []string{"--cluster.etcd.password-file=/p"}, "needs --cluster.etcd.username"},
		{"a lease under a second", []string{"--cluster.lease-ttl=500ms"}, "at least 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseFlags(append([]string{"--cluster.etcd.endpoints=http://127.0.0.1:2379"}, tc.args...))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parseFlags = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestTheAdvertiseURLComesFromAListenAddressNamingAHost(t *testing.T) {
	tlsConfig := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(tlsConfig, []byte("tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		flag      string
		listen    []string
		webConfig string
		want      string
	}{
		{"the flag wins, without its trailing slash", "http://gw-0.gw:9091/", []string{"127.0.0.1:9091"}, "", "http://gw-0.gw:9091"},
		{"a concrete address", "", []string{"10.1.2.3:9091"}, "", "http://10.1.2.3:9091"},
		{"the first concrete one of several", "", []string{":9091", "0.0.0.0:9092", "[::1]:9093"}, "", "http://[::1]:9093"},
		{"https when the web config serves TLS", "", []string{"gw.example:9091"}, tlsConfig, "https://gw.example:9091"},
		{"none concrete: an error asking for the flag", "", []string{":9091", "[::]:9091"}, "", "set --cluster.advertise-url"},
		{"a flag that is no URL", "gw:9091", nil, "", "not an http(s) URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clusterFlags{advertiseURL: tc.flag}
			got, err := c.advertise(tc.listen, tc.webConfig)
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("advertise = %q, want %q", got, tc.want)
			}
		})
	}
}
