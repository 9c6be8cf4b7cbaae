package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"go.yaml.in/yaml/v2"
)

// clusterFlags are the --cluster.* flags: set --cluster.etcd.endpoints and
// the replica keeps its state in etcd, shared with the other replicas.
type clusterFlags struct {
	endpoints    []string
	prefix       string
	caFile       string
	certFile     string
	keyFile      string
	username     string
	passwordFile string
	advertiseURL string
	leaseTTL     time.Duration
}

// addClusterFlags declares the cluster flags (pushgate only).
func addClusterFlags(app *kingpin.Application, c *clusterFlags) {
	app.Flag("cluster.etcd.endpoints", "etcd client URLs, comma-separated or repeated: the replica keeps its groups in etcd and serves them with every other replica of the same --cluster.etcd.prefix. Empty: no cluster (pushgate only).").
		StringsVar(&c.endpoints)
	app.Flag("cluster.etcd.prefix", "Key prefix of this gateway's data in etcd, so that several gateways can share one etcd (pushgate only).").
		Default("/pushgate/").StringVar(&c.prefix)
	app.Flag("cluster.etcd.ca-file", "CA certificates to verify etcd's TLS certificates with (pushgate only).").StringVar(&c.caFile)
	app.Flag("cluster.etcd.cert-file", "Client certificate for etcd's TLS client authentication (pushgate only).").StringVar(&c.certFile)
	app.Flag("cluster.etcd.key-file", "Key of --cluster.etcd.cert-file (pushgate only).").StringVar(&c.keyFile)
	app.Flag("cluster.etcd.username", "etcd user name (pushgate only).").StringVar(&c.username)
	app.Flag("cluster.etcd.password-file", "File holding the etcd user's password (pushgate only).").StringVar(&c.passwordFile)
	app.Flag("cluster.advertise-url", "URL the other replicas reach this one at, to forward writes while it leads. Default: derived from --web.listen-address when that names a host (pushgate only).").
		StringVar(&c.advertiseURL)
	app.Flag("cluster.lease-ttl", "Lease of the cluster leader's election: when a leader dies, writes pause for up to this long before another replica takes over (pushgate only).").
		Default("5s").DurationVar(&c.leaseTTL)
}

// enabled reports whether cluster mode was asked for.
func (c *clusterFlags) enabled() bool { return len(c.etcdEndpoints()) > 0 }

// etcdEndpoints returns the endpoints, comma-separated values split.
func (c *clusterFlags) etcdEndpoints() []string {
	var out []string
	for _, v := range c.endpoints {
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				out = append(out, e)
			}
		}
	}
	return out
}

// check refuses flag combinations cluster mode cannot honour.
func (c *clusterFlags) check(persistenceFile string) error {
	if !c.enabled() {
		return nil
	}
	if persistenceFile != "" {
		return errors.New("--persistence.file and --cluster.etcd.endpoints exclude each other: a cluster keeps its state in etcd")
	}
	if c.leaseTTL < time.Second {
		return fmt.Errorf("--cluster.lease-ttl must be at least 1s, got %s", c.leaseTTL)
	}
	if (c.certFile == "") != (c.keyFile == "") {
		return errors.New("--cluster.etcd.cert-file and --cluster.etcd.key-file go together")
	}
	if c.passwordFile != "" && c.username == "" {
		return errors.New("--cluster.etcd.password-file needs --cluster.etcd.username")
	}
	return nil
}

// advertise returns --cluster.advertise-url, or one derived from the first
// listen address naming a host: https when the web config file sets up TLS.
func (c *clusterFlags) advertise(listen []string, webConfigFile string) (string, error) {
	if c.advertiseURL != "" {
		u, err := url.Parse(c.advertiseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", fmt.Errorf("--cluster.advertise-url %q is not an http(s) URL", c.advertiseURL)
		}
		return strings.TrimRight(c.advertiseURL, "/"), nil
	}
	scheme := "http"
	if webConfigFile != "" {
		tlsOn, err := webConfigHasTLS(webConfigFile)
		if err != nil {
			return "", err
		}
		if tlsOn {
			scheme = "https"
		}
	}
	for _, addr := range listen {
		host, port, err := net.SplitHostPort(addr)
		if err != nil || port == "" || port == "0" {
			continue
		}
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			continue
		}
		return scheme + "://" + net.JoinHostPort(host, port), nil
	}
	return "", fmt.Errorf("set --cluster.advertise-url: no --web.listen-address (%s) names a host other replicas can reach", strings.Join(listen, ", "))
}

// webConfigHasTLS reports whether an exporter-toolkit web config file
// serves TLS.
func webConfigHasTLS(path string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("read --web.config.file: %w", err)
	}
	var cfg struct {
		TLS struct {
			CertFile string `yaml:"cert_file"`
			Cert     string `yaml:"cert"`
		} `yaml:"tls_server_config"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return false, fmt.Errorf("parse --web.config.file: %w", err)
	}
	return cfg.TLS.CertFile != "" || cfg.TLS.Cert != "", nil
}

// tlsConfig returns the TLS configuration for etcd, nil when no TLS flag is
// set (the endpoints' https scheme then verifies with the system roots).
func (c *clusterFlags) tlsConfig() (*tls.Config, error) {
	if c.caFile == "" && c.certFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.caFile != "" {
		pem, err := os.ReadFile(c.caFile)
		if err != nil {
			return nil, fmt.Errorf("read --cluster.etcd.ca-file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--cluster.etcd.ca-file %s holds no PEM certificate", c.caFile)
		}
	}
	if c.certFile != "" {
		cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
		if err != nil {
			return nil, fmt.Errorf("load --cluster.etcd.cert-file and --cluster.etcd.key-file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// password reads --cluster.etcd.password-file, without its trailing newline.
func (c *clusterFlags) password() (string, error) {
	if c.passwordFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(c.passwordFile)
	if err != nil {
		return "", fmt.Errorf("read --cluster.etcd.password-file: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// clusterSettings are the settings every replica of a cluster must share,
// by flag name: those that decide whether a push is accepted and how it is
// answered. The first replica records them in etcd; a replica whose
// settings differ refuses to start.
func clusterSettings(c *config, routePrefix string) map[string]string {
	itoa := strconv.Itoa
	m := map[string]string{
		"push.enable-utf8-names":         strconv.FormatBool(c.utf8Names),
		"push.disable-consistency-check": strconv.FormatBool(c.disableConsistencyCheck),
		"push.max-body-bytes":            strconv.FormatInt(c.maxBodyBytes, 10),
		"web.telemetry-path":             c.telemetryPath,
		"web.route-prefix":               routePrefix,
	}
	for flag, v := range c.limits.Values() {
		m[flag] = itoa(v)
	}
	c.otlp.clusterSettings(m)
	return m
}
