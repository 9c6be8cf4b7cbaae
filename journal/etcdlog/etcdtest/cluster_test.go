package etcdtest

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/pkg/v3/proxy"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/pushgate/pushgate/journal/etcdlog"
)

// cluster is a set of etcd members embedded in the test process.
type cluster struct {
	members   []*embed.Etcd
	endpoints []string // client URLs, one per member
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	listeners := make([]net.Listener, n)
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners[i] = ln
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	for _, ln := range listeners {
		ln.Close()
	}
	return ports
}

// startCluster starts n etcd members on loopback ports and waits until
// they have elected a leader. tweak, if not nil, adjusts each member's
// configuration. The members stop when the test ends.
func startCluster(t testing.TB, n int, tweak func(*embed.Config)) *cluster {
	t.Helper()
	ports := freePorts(t, 2*n)
	var initial []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, ports[2*i+1]))
	}
	c := &cluster{}
	dir := t.TempDir()
	for i := range n {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = filepath.Join(dir, cfg.Name)
		client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i])}
		peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = "pushgate-etcdtest"
		cfg.ClusterState = embed.ClusterStateFlagNew
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		if tweak != nil {
			tweak(cfg)
		}
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			c.stop()
			t.Fatalf("start etcd member %s: %v", cfg.Name, err)
		}
		c.members = append(c.members, e)
		c.endpoints = append(c.endpoints, client.String())
	}
	t.Cleanup(c.stop)
	timeout := time.After(20 * time.Second)
	for _, e := range c.members {
		select {
		case <-e.Server.ReadyNotify():
		case err := <-e.Err():
			t.Fatalf("etcd member %s: %v", e.Config().Name, err)
		case <-timeout:
			t.Fatal("the etcd members did not become ready within 20s")
		}
	}
	return c
}

func (c *cluster) stop() {
	for _, e := range c.members {
		e.Close()
	}
}

// linkProxy is a TCP proxy between one Log and one etcd member, to pause
// the link.
type linkProxy struct {
	proxy.Server
	endpoint string
}

// newProxy starts a proxy to the member at target (a client URL).
func newProxy(t testing.TB, target string) *linkProxy {
	t.Helper()
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	from := url.URL{Scheme: "tcp", Host: fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0])}
	p := proxy.NewServer(proxy.ServerConfig{
		Logger: zap.NewNop(),
		From:   from,
		To:     url.URL{Scheme: "tcp", Host: to.Host},
	})
	select {
	case <-p.Ready():
	case err := <-p.Error():
		t.Fatalf("proxy to %s: %v", target, err)
	case <-time.After(10 * time.Second):
		t.Fatalf("proxy to %s not ready within 10s", target)
	}
	t.Cleanup(func() { p.Close() })
	return &linkProxy{Server: p, endpoint: "http://" + from.Host}
}

// pause stops the link in both directions; unpause lets the held traffic
// through.
func (p *linkProxy) pause()   { p.PauseTx(); p.PauseRx() }
func (p *linkProxy) unpause() { p.UnpauseTx(); p.UnpauseRx() }

// prefixes gives every Log of a test run its own key prefix, so that tests
// sharing a cluster do not see each other's keys.
var prefixes atomic.Int64

func newPrefix() string { return fmt.Sprintf("/pushgate-test-%d/", prefixes.Add(1)) }

// testLogger logs to the test's output at debug level when -v is set and
// ETCDLOG_DEBUG is, and discards otherwise.
func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("ETCDLOG_DEBUG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// openLog opens a Log on endpoints with prefix, closed when the test ends.
func openLog(t testing.TB, endpoints []string, prefix string, tweak func(*etcdlog.Config)) *etcdlog.Log {
	t.Helper()
	cfg := etcdlog.Config{
		Endpoints:      endpoints,
		Prefix:         prefix,
		LeaseTTL:       2 * time.Second,
		AdvertiseURL:   fmt.Sprintf("http://replica-%d.test", prefixes.Add(1)),
		Meta:           etcdlog.Meta{Codec: 2, Settings: map[string]string{"push.enable-utf8-names": "false"}},
		Logger:         testLogger(t),
		RequestTimeout: 5 * time.Second,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := etcdlog.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return l
}

// eventually polls cond every 10ms until it holds, failing the test after
// within.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
