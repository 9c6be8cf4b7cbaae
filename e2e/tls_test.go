package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
)

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, generated per test and written as PEM files.
type testPKI struct {
	dir                           string
	caFile                        string
	serverCertFile, serverKeyFile string
	clientCertFile, clientKeyFile string
	pool                          *x509.CertPool
	client                        tls.Certificate
}

// newTestPKI generates the CA and both certificates in a temporary directory.
func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	p := &testPKI{dir: dir, pool: x509.NewCertPool()}
	now := time.Now()

	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "pushgate e2e CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	p.pool.AddCert(caCert)
	p.caFile = writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER)

	issue := func(name string, serial int64, usage x509.ExtKeyUsage, ips []net.IP) (certFile, keyFile string, cert tls.Certificate) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		certFile = writePEM(t, dir, name+".pem", "CERTIFICATE", der)
		keyFile = writePEM(t, dir, name+"-key.pem", "EC PRIVATE KEY", keyDER)
		cert, err = tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		return certFile, keyFile, cert
	}
	p.serverCertFile, p.serverKeyFile, _ = issue("server", 2, x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback})
	p.clientCertFile, p.clientKeyFile, p.client = issue("client", 3, x509.ExtKeyUsageClientAuth, nil)
	return p
}

// newKey generates an ECDSA P-256 key.
func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// writePEM writes one PEM block to dir/name and returns its path.
func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// httpsClient returns a client trusting the test CA, presenting the client
// certificate when withCert is set.
func (p *testPKI) httpsClient(withCert bool) *http.Client {
	cfg := &tls.Config{RootCAs: p.pool, MinVersion: tls.VersionTLS12}
	if withCert {
		cfg.Certificates = []tls.Certificate{p.client}
	}
	return &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: cfg},
	}
}

// writeWebConfig writes an exporter-toolkit web config file.
func (p *testPKI) writeWebConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(p.dir, "web-config.yml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// tlsBasicAuthConfig writes a web config that serves TLS with the test
// server certificate and basic auth for the given user and password pairs.
func (p *testPKI) tlsBasicAuthConfig(t *testing.T, userPasswords ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "tls_server_config:\n  cert_file: %q\n  key_file: %q\nbasic_auth_users:\n", p.serverCertFile, p.serverKeyFile)
	for i := 0; i+1 < len(userPasswords); i += 2 {
		fmt.Fprintf(&b, "  %s: %q\n", userPasswords[i], bcryptHash(t, userPasswords[i+1]))
	}
	return p.writeWebConfig(t, b.String())
}

// startTLSGateway starts the gateway with --web.config.file and waits until
// it answers ready over HTTPS through client (which must be able to pass
// the server's client-certificate and basic-auth checks; readyAuth is the
// Authorization header for the latter, or "").
func startTLSGateway(t *testing.T, client *http.Client, readyAuth string, flags ...string) *gateway {
	t.Helper()
	bin := gatewayBinary(t)
	var last *process
	for attempt := 0; attempt < 5; attempt++ {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		p := startProcess(t, "gateway", bin, append([]string{"--web.listen-address=" + addr}, flags...)...)
		g := &gateway{process: p, URL: "https://" + addr, Addr: addr}
		deadline := time.Now().Add(readyTimeout)
		for time.Now().Before(deadline) && !p.exited() {
			req, _ := http.NewRequest(http.MethodGet, g.url("/-/ready"), nil)
			if readyAuth != "" {
				req.Header.Set("Authorization", readyAuth)
			}
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return g
				}
			}
			time.Sleep(25 * time.Millisecond)
		}
		last = p
		if !strings.Contains(p.log(), "address already in use") {
			break
		}
	}
	t.Fatalf("TLS gateway did not become ready; log:\n%s", last.logTail(16<<10))
	return nil
}

// getWith sends a GET through client and returns the status and body.
func getWith(client *http.Client, u, authorization string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return 0, "", err
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	return resp.StatusCode, string(b), nil
}

// TestTLSClientCertificates runs the gateway with a web config requiring a
// client certificate signed by the test CA: the Go client pushes over TLS
// with its certificate, a scrape with it finds the series, and a client
// without a certificate (or plain HTTP) is refused.
func TestTLSClientCertificates(t *testing.T) {
	pki := newTestPKI(t)
	cfg := pki.writeWebConfig(t, fmt.Sprintf(`tls_server_config:
  cert_file: %q
  key_file: %q
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: %q
`, pki.serverCertFile, pki.serverKeyFile, pki.caFile))
	withCert := pki.httpsClient(true)
	g := startTLSGateway(t, withCert, "", "--web.config.file="+cfg)

	reg := prometheus.NewRegistry()
	newGauge(reg, "tls_pushed_value", "Pushed over mutual TLS.", 3.5)
	if err := push.New(g.URL, "tls_job").Grouping("instance", "i1").Gatherer(reg).Client(withCert).Push(); err != nil {
		t.Fatalf("push over TLS with a client certificate: %v", err)
	}
	code, body, err := getWith(withCert, g.url("/metrics"), "")
	if err != nil || code != http.StatusOK {
		t.Fatalf("scrape over TLS: %d, %v", code, err)
	}
	mfs, err := parseText([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	mfs.requireValue(t, "tls_pushed_value", lbl("job", "tls_job", "instance", "i1"), 3.5)

	// Without a client certificate the handshake fails (with TLS 1.3 the
	// server's alert arrives on the first read, still inside Do).
	reg = prometheus.NewRegistry()
	newGauge(reg, "tls_pushed_value", "Pushed over mutual TLS.", 666)
	if err := push.New(g.URL, "tls_job").Grouping("instance", "i1").Gatherer(reg).Client(pki.httpsClient(false)).Push(); err == nil {
		t.Fatal("push without a client certificate succeeded")
	}
	if code, _, err := getWith(pki.httpsClient(false), g.url("/metrics"), ""); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("scrape without a client certificate: %d, %v; want a TLS certificate error", code, err)
	}
	// Plain HTTP to the TLS port is not served.
	if r, err := doRequest(bgCtx, http.MethodGet, "http://"+g.Addr+"/metrics", nil); err == nil && r.Status == http.StatusOK {
		t.Fatalf("plain HTTP was served: %s", r)
	}
	// A certificate from another CA is refused.
	other := newTestPKI(t)
	otherClient := other.httpsClient(true)
	otherClient.Transport.(*http.Transport).TLSClientConfig.RootCAs = pki.pool
	if code, _, err := getWith(otherClient, g.url("/metrics"), ""); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client certificate from another CA: %d, %v; want a TLS certificate error", code, err)
	}

	code, body, err = getWith(withCert, g.url("/metrics"), "")
	if err != nil || code != http.StatusOK {
		t.Fatalf("scrape: %d, %v", code, err)
	}
	if mfs, err = parseText([]byte(body)); err != nil {
		t.Fatal(err)
	}
	mfs.requireValue(t, "tls_pushed_value", lbl("job", "tls_job", "instance", "i1"), 3.5)
}

// TestTLSBasicAuthAndPrometheus runs the gateway with TLS and
// exporter-toolkit's basic_auth_users: the Go client pushes with basic auth,
// a wrong password gets 401, and the real Prometheus scrapes the gateway
// over TLS with basic auth and finds the pushed series.
func TestTLSBasicAuthAndPrometheus(t *testing.T) {
	pki := newTestPKI(t)
	cfg := pki.tlsBasicAuthConfig(t, "pusher", "push-pw", "prom", "prom-pw")
	client := pki.httpsClient(false)
	g := startTLSGateway(t, client, basicAuthHeader("prom", "prom-pw"), "--web.config.file="+cfg)

	reg := prometheus.NewRegistry()
	newGauge(reg, "tls_prom_value", "Pushed over TLS with basic auth.", 42)
	if err := push.New(g.URL, "tls_batch").Grouping("instance", "host1").Gatherer(reg).Client(client).BasicAuth("pusher", "push-pw").Push(); err != nil {
		t.Fatalf("push over TLS with basic auth: %v", err)
	}
	if err := push.New(g.URL, "tls_batch").Grouping("instance", "host1").Gatherer(reg).Client(client).BasicAuth("pusher", "wrong").Push(); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("push with a wrong password: err = %v, want a 401", err)
	}
	if code, _, err := getWith(client, g.url("/metrics"), ""); err != nil || code != http.StatusUnauthorized {
		t.Fatalf("scrape without basic auth: %d, %v; want 401", code, err)
	}

	p := startPrometheusWithConfig(t, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: pushgate
    honor_labels: true
    scheme: https
    basic_auth:
      username: prom
      password: prom-pw
    tls_config:
      ca_file: %q
    static_configs:
      - targets: [%q]
`, pki.caFile, g.Addr))
	want := `{instance="host1",job="tls_batch"} 42`
	eventually(t, promTimeout, func() error {
		res, err := p.query("tls_prom_value")
		if err != nil {
			return err
		}
		if got := describe(res); got != want {
			return fmt.Errorf("tls_prom_value = %s, want %s", got, want)
		}
		return nil
	})
	eventually(t, promTimeout, func() error {
		res, err := p.query(`up{job="pushgate"}`)
		if err != nil {
			return err
		}
		if got, want := describe(res), fmt.Sprintf(`{instance=%q,job="pushgate"} 1`, g.Addr); got != want {
			return fmt.Errorf("up = %s, want %s", got, want)
		}
		return nil
	})
}
