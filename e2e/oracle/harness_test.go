package oracle

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// readyTimeout bounds how long a started gateway may take to answer ready.
const readyTimeout = 60 * time.Second

// stopTimeout bounds how long a gateway may take to exit after SIGTERM.
const stopTimeout = 30 * time.Second

var (
	buildOnce sync.Once
	builtPath string
	buildErr  error
	buildDir  string
)

// TestMain removes the directory of the built gateway after the run.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// gatewayBinary returns the binary under test: $PUSHGATE_BINARY, or
// ./cmd/pushgate of the repository holding this module, built once per run.
func gatewayBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PUSHGATE_BINARY"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		root, err := repoRoot()
		if err != nil {
			buildErr = err
			return
		}
		buildDir, err = os.MkdirTemp("", "pushgate-oracle-")
		if err != nil {
			buildErr = fmt.Errorf("temp dir: %w", err)
			return
		}
		builtPath = filepath.Join(buildDir, "pushgate")
		cmd := exec.Command("go", "build", "-o", builtPath, "./cmd/pushgate")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/pushgate in %s: %w\n%s", root, err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("building the gateway failed: %v", buildErr)
	}
	return builtPath
}

// repoRoot returns the directory of the gateway's go.mod, two levels above
// this module's.
func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "..", "..")
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("the gateway's go.mod: %w", err)
	}
	if !bytes.HasPrefix(b, []byte("module github.com/pushgate/pushgate\n")) {
		return "", fmt.Errorf("%s/go.mod is not the gateway's module", root)
	}
	return filepath.Abs(root)
}

// gateway is one running gateway process on a loopback port.
type gateway struct {
	bin   string
	args  []string
	url   string
	cmd   *exec.Cmd
	log   *bytes.Buffer
	logMu *sync.Mutex
	done  chan struct{}
}

// lockedWriter serializes writes of the process's stdout and stderr.
type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.b.Len() > 1<<20 {
		w.b.Reset()
	}
	return w.b.Write(p)
}

// startGateway starts bin on a free loopback port with the given flags and
// waits until it is ready. The caller stops it.
func startGateway(bin string, flags ...string) (*gateway, error) {
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		g := &gateway{bin: bin, args: append([]string{"--web.listen-address=" + addr}, flags...), url: "http://" + addr}
		if err := g.start(); err != nil {
			lastErr = err
			if strings.Contains(g.output(), "address already in use") {
				continue
			}
			return nil, err
		}
		return g, nil
	}
	return nil, lastErr
}

// start runs the process with g's arguments and waits for /-/ready.
func (g *gateway) start() error {
	g.log, g.logMu = &bytes.Buffer{}, &sync.Mutex{}
	g.cmd = exec.Command(g.bin, g.args...)
	w := lockedWriter{mu: g.logMu, b: g.log}
	g.cmd.Stdout, g.cmd.Stderr = w, w
	if err := g.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", g.bin, err)
	}
	g.done = make(chan struct{})
	go func() {
		_ = g.cmd.Wait()
		close(g.done)
	}()
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-g.done:
			return fmt.Errorf("gateway exited before it was ready: %s", g.output())
		default:
		}
		resp, err := readyClient.Get(g.url + "/-/ready")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	g.kill()
	return fmt.Errorf("gateway not ready within %v: %s", readyTimeout, g.output())
}

// stop sends SIGTERM and waits for the process to exit.
func (g *gateway) stop() error {
	select {
	case <-g.done:
		return nil
	default:
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.done:
		return nil
	case <-time.After(stopTimeout):
		g.kill()
		return fmt.Errorf("gateway did not exit within %v of SIGTERM", stopTimeout)
	}
}

// kill ends the process at once.
func (g *gateway) kill() {
	_ = g.cmd.Process.Kill()
	<-g.done
}

// restart stops the process (with SIGKILL when hard, else SIGTERM) and
// starts it again on the same address with the same flags.
func (g *gateway) restart(hard bool) error {
	if hard {
		g.kill()
	} else if err := g.stop(); err != nil {
		return err
	}
	return g.start()
}

// output returns the process's recent output.
func (g *gateway) output() string {
	g.logMu.Lock()
	defer g.logMu.Unlock()
	s := g.log.String()
	if len(s) > 8<<10 {
		s = "…" + s[len(s)-8<<10:]
	}
	return s
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("listen on loopback: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// readyClient polls readiness.
var readyClient = &http.Client{Timeout: 2 * time.Second}

// httpClient sends every other request: no transparent gzip, no redirects.
var httpClient = &http.Client{
	Timeout:   60 * time.Second,
	Transport: &http.Transport{DisableCompression: true},
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// response is a fully read HTTP response.
type response struct {
	status int
	header http.Header
	body   []byte
}

// send performs one request and reads the whole answer. header holds name,
// value pairs.
func send(ctx context.Context, method, url string, body []byte, header ...string) (response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: %w", method, url, err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: read body: %w", method, url, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// gzipBytes compresses b.
func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// gunzip decompresses a whole gzip stream; a truncated stream is an error.
func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	if err := zr.Close(); err != nil {
		return nil, err
	}
	return out, nil
}
