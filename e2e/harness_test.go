// Package e2e holds black-box tests of the pushgate binary: it is built once
// per test run, started on loopback ports and driven over HTTP by real client
// libraries (Go, Python, Node, curl) and a real Prometheus (Debian's 2.42, and
// 3 with its promtool). Nothing from this module is imported; only client
// libraries and the standard library.
//
// Environment:
//
//	PUSHGATE_BINARY=/path       test this binary instead of building ./cmd/pushgate
//	                            (e.g. /usr/bin/prometheus-pushgateway, the reference)
//	PUSHGATE_RACE_BINARY=0      do not build a -race binary for the concurrency test
//	PROMETHEUS3_DIR=/path       Prometheus 3's prometheus and promtool (default: where
//	                            scripts/prometheus3.sh builds them, once per machine)
//	CI=true                     a missing external tool fails instead of skipping
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// readyTimeout bounds how long a started process may take to answer ready.
// A -race binary loading a journal on 2 shared cores can be slow.
const readyTimeout = 60 * time.Second

var (
	// binaryPath is the gateway binary under test.
	binaryPath string
	// buildErr is set when building ./cmd/pushgate failed; every test that
	// needs the binary then fails with the compiler output.
	buildErr error
	// moduleRoot is the directory holding go.mod.
	moduleRoot string
	// buildDir holds the binaries built for this run.
	buildDir string

	raceOnce sync.Once
	raceBin  string
	raceErr  error
)

// TestMain builds the gateway once per `go test` run into a temporary
// directory (unless PUSHGATE_BINARY names one) and removes it afterwards.
func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	buildDir, err = os.MkdirTemp("", "pushgate-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(buildDir)

	moduleRoot, err = findModuleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if p := os.Getenv("PUSHGATE_BINARY"); p != "" {
		binaryPath = p
		fmt.Fprintf(os.Stderr, "e2e: testing %s (PUSHGATE_BINARY)\n", p)
	} else {
		binaryPath = filepath.Join(buildDir, "pushgate")
		buildErr = goBuild(binaryPath)
	}
	return m.Run()
}

// findModuleRoot returns the directory of the go.mod that holds this package.
func findModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a Go module")
	}
	return filepath.Dir(gomod), nil
}

// goBuild compiles ./cmd/pushgate to out with extra go build flags.
func goBuild(out string, flags ...string) error {
	args := append([]string{"build"}, flags...)
	args = append(args, "-o", out, "./cmd/pushgate")
	cmd := exec.Command("go", args...)
	cmd.Dir = moduleRoot
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}

// gatewayBinary returns the binary under test or fails the test when it
// could not be built.
func gatewayBinary(t *testing.T) string {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("building the gateway failed: %v", buildErr)
	}
	return binaryPath
}

// raceBinary returns a gateway binary built with -race, building it on first
// use. With PUSHGATE_BINARY set, or PUSHGATE_RACE_BINARY=0, it returns the
// ordinary binary.
func raceBinary(t *testing.T) string {
	t.Helper()
	bin := gatewayBinary(t)
	if os.Getenv("PUSHGATE_BINARY") != "" || os.Getenv("PUSHGATE_RACE_BINARY") == "0" {
		return bin
	}
	raceOnce.Do(func() {
		raceBin = filepath.Join(buildDir, "pushgate-race")
		raceErr = goBuild(raceBin, "-race")
	})
	if raceErr != nil {
		t.Fatalf("building the -race gateway failed: %v", raceErr)
	}
	return raceBin
}

// requireTool makes sure an external program is on PATH (or at an absolute
// path). Outside CI a missing tool skips the test loudly; with CI=true it
// fails it, so that CI never passes by skipping.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		missingDependency(t, name)
	}
	return p
}

// missingDependency skips (or, in CI, fails) a test whose external
// dependency what is not installed.
func missingDependency(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not installed — CI must install it (make test-deps)", what)
	}
	t.Skipf("SKIPPING: %s not installed — run make test-deps", what)
}

// freePort returns a loopback TCP port that was free a moment ago.
//
// Ports come from 10000-29999, below Linux's ephemeral range (32768 and up
// by default), and none twice in one test binary: a port the kernel handed
// out with :0 was taken by an outgoing connection between its pick and an
// etcd member's listen ("bind: address already in use"), since outgoing
// connections take their local ports from that range.
func freePort(t *testing.T) int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = make(map[int]bool)
	}
	for range 1000 {
		p := 10000 + rand.IntN(20000)
		if handedOut.ports[p] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		handedOut.ports[p] = true
		return p
	}
	t.Fatal("no free loopback port in 10000-29999 after 1000 tries")
	return 0
}

// handedOut holds the ports freePort returned in this test binary.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// process is an external program started by a test, with its output in a
// per-test log file.
type process struct {
	t       *testing.T
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	state   *os.ProcessState
}

// startProcess starts bin with args, output to a log file in the test's
// temporary directory. The process is killed when the test ends, and its log
// is printed if the test failed.
func startProcess(t *testing.T, name, bin string, args ...string) *process {
	t.Helper()
	return startProcessOwned(t, t, name, bin, args...)
}

// startProcessOwned is startProcess for a process that must outlive the
// test t starting it (a cluster member a subtest restarts, which later
// subtests use): owner, t or a test t runs under, holds its log file,
// ends it when owner ends, and prints its log if owner failed. t reports
// a failure to start it.
func startProcessOwned(t, owner *testing.T, name, bin string, args ...string) *process {
	t.Helper()
	logFile, err := os.CreateTemp(owner.TempDir(), name+"-*.log")
	if err != nil {
		t.Fatalf("create log: %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start %s: %v", bin, err)
	}
	p := &process{t: owner, name: name, cmd: cmd, logPath: logFile.Name(), done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		p.state = cmd.ProcessState
		logFile.Close()
		close(p.done)
	}()
	owner.Cleanup(func() {
		if !p.exited() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				<-p.done
			}
		}
		if strings.Contains(p.log(), "WARNING: DATA RACE") {
			owner.Errorf("%s reported a data race (see its log below)", name)
		}
		if owner.Failed() {
			owner.Logf("---- %s log (%s %s) ----\n%s", name, bin, strings.Join(args, " "), p.logTail(64<<10))
		}
	})
	return p
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to timeout for the process to end and returns its exit code
// (-1 when it was killed by a signal); ok is false on timeout.
func (p *process) wait(timeout time.Duration) (code int, ok bool) {
	select {
	case <-p.done:
		return p.state.ExitCode(), true
	case <-time.After(timeout):
		return 0, false
	}
}

// signal sends sig and waits for the process to end, failing the test if it
// does not within 30 s. It returns the exit code.
func (p *process) signal(sig os.Signal) int {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil && !p.exited() {
		p.t.Fatalf("signal %s: %v", p.name, err)
	}
	code, ok := p.wait(30 * time.Second)
	if !ok {
		p.t.Fatalf("%s did not exit within 30s after %v", p.name, sig)
	}
	return code
}

// log returns the process output so far.
func (p *process) log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// logTail returns at most n trailing bytes of the output.
func (p *process) logTail(n int) string {
	s := p.log()
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// gateway is a running gateway process.
type gateway struct {
	*process
	// URL is the base URL including any route prefix, without trailing slash.
	URL string
	// Addr is host:port.
	Addr string
}

// url returns the gateway URL of path (which starts with /).
func (g *gateway) url(path string) string { return g.URL + path }

// startGateway starts the gateway binary on a free loopback port with extra
// flags and waits until it answers ready.
func startGateway(t *testing.T, flags ...string) *gateway {
	t.Helper()
	return startGatewayBinary(t, gatewayBinary(t), flags...)
}

// startGatewayBinary is startGateway for a given binary.
func startGatewayBinary(t *testing.T, bin string, flags ...string) *gateway {
	t.Helper()
	prefix := routePrefix(flags)
	if os.Getenv("PUSHGATE_BINARY") != "" && !hasFlag(flags, "--persistence.file") {
		// Debian's packaged reference defaults to a system-wide persistence
		// file; keep tests of such binaries in memory and independent.
		flags = append([]string{"--persistence.file="}, flags...)
	}
	var last *process
	for attempt := 0; attempt < 5; attempt++ {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		args := append([]string{"--web.listen-address=" + addr}, flags...)
		p := startProcess(t, "gateway", bin, args...)
		g := &gateway{process: p, URL: "http://" + addr + prefix, Addr: addr}
		if waitReady(t, p, g.url("/-/ready")) {
			return g
		}
		last = p
		if !strings.Contains(p.log(), "address already in use") {
			break
		}
	}
	t.Fatalf("gateway did not become ready; log:\n%s", last.logTail(16<<10))
	return nil
}

// hasFlag reports whether flags set the flag name (as --name=value).
func hasFlag(flags []string, name string) bool {
	for _, f := range flags {
		if f == name || strings.HasPrefix(f, name+"=") {
			return true
		}
	}
	return false
}

// routePrefix derives the route prefix the way the reference does: the
// --web.route-prefix flag, else the path of --web.external-url.
func routePrefix(flags []string) string {
	var prefix string
	var found bool
	for _, f := range flags {
		if v, ok := strings.CutPrefix(f, "--web.route-prefix="); ok {
			prefix, found = v, true
		}
	}
	if !found {
		for _, f := range flags {
			if v, ok := strings.CutPrefix(f, "--web.external-url="); ok {
				if u, err := url.Parse(v); err == nil {
					prefix = u.Path
				}
			}
		}
	}
	prefix = strings.TrimRight(prefix, "/")
	if prefix != "" && !strings.HasPrefix(prefix, "/") {
		prefix = "/" + prefix
	}
	return prefix
}

// waitReady polls readyURL until it answers 200; it returns false when the
// process exits first or readyTimeout passes.
func waitReady(t *testing.T, p *process, readyURL string) bool {
	t.Helper()
	return waitReadyTimeout(t, p, readyURL, readyTimeout)
}

// waitReadyTimeout is waitReady with a given timeout.
func waitReadyTimeout(t *testing.T, p *process, readyURL string, timeout time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if p.exited() {
			return false
		}
		resp, err := quickClient.Get(readyURL)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	return false
}

// restart starts a new gateway process with the same binary, address and
// flags as g, which must have exited.
func (g *gateway) restart(t *testing.T) *gateway {
	t.Helper()
	if !g.exited() {
		t.Fatal("restart: gateway still running")
	}
	args := g.cmd.Args[1:]
	p := startProcess(t, "gateway", g.cmd.Path, args...)
	ng := &gateway{process: p, URL: g.URL, Addr: g.Addr}
	// The old socket is closed; the port may still be taken by someone else in
	// theory, which would show as an early exit.
	if !waitReady(t, p, ng.url("/-/ready")) {
		t.Fatalf("restarted gateway did not become ready; log:\n%s", p.logTail(16<<10))
	}
	return ng
}

// bgCtx is the context of requests that no test cancels.
var bgCtx = context.Background()

// quickClient is used for readiness polls.
var quickClient = &http.Client{Timeout: 2 * time.Second}

// httpClient is used for every other request. It neither follows redirects
// (so status codes are the server's own) nor asks for gzip on its own.
var httpClient = &http.Client{
	Timeout:   60 * time.Second,
	Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64},
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// response is a fully read HTTP response.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// String summarizes r for failure messages.
func (r response) String() string {
	return fmt.Sprintf("%d %q", r.Status, r.Body)
}

// doRequest sends a request and reads the whole response; it returns an error
// instead of failing the test, for use from goroutines.
func doRequest(ctx context.Context, method, u string, body []byte, header ...string) (response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return response{}, err
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// do sends a request and fails the test on a transport error. header holds
// name, value pairs.
func do(t *testing.T, method, u string, body []byte, header ...string) response {
	t.Helper()
	r, err := doRequest(context.Background(), method, u, body, header...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	return r
}

// mustStatus sends a request and requires the given status.
func mustStatus(t *testing.T, want int, method, u string, body []byte, header ...string) response {
	t.Helper()
	r := do(t, method, u, body, header...)
	if r.Status != want {
		t.Fatalf("%s %s: got %s, want status %d", method, u, r, want)
	}
	return r
}

// pushText sends a text-format body with PUT or POST and requires 200.
func pushText(t *testing.T, g *gateway, method, path, body string) {
	t.Helper()
	mustStatus(t, http.StatusOK, method, g.url(path), []byte(body))
}

// requireMediaType checks that a Content-Type header has the media type and
// at least the given parameters (name, value pairs).
func requireMediaType(t *testing.T, contentType, mediaType string, params ...string) {
	t.Helper()
	mt, got, err := mime.ParseMediaType(contentType)
	if err != nil {
		t.Fatalf("Content-Type %q: %v", contentType, err)
	}
	if mt != mediaType {
		t.Fatalf("Content-Type %q: media type %q, want %q", contentType, mt, mediaType)
	}
	for i := 0; i+1 < len(params); i += 2 {
		if got[params[i]] != params[i+1] {
			t.Fatalf("Content-Type %q: %s=%q, want %q", contentType, params[i], got[params[i]], params[i+1])
		}
	}
}

// families is a parsed scrape, by family name.
type families map[string]*dto.MetricFamily

// scrape GETs /metrics (the default text format), checks status and exact
// Content-Type and parses the body with expfmt.
func scrape(t *testing.T, g *gateway) families {
	t.Helper()
	mfs, err := scrapeErr(context.Background(), g.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// scrapeErr is scrape without a testing.T, for goroutines.
func scrapeErr(ctx context.Context, u string) (families, error) {
	r, err := doRequest(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape: %w", err)
	}
	if r.Status != http.StatusOK {
		return nil, fmt.Errorf("scrape: got %s", r)
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "text/plain" || params["version"] != "0.0.4" || params["charset"] != "utf-8" {
		return nil, fmt.Errorf("scrape: Content-Type %q, want text/plain; version=0.0.4; charset=utf-8", r.Header.Get("Content-Type"))
	}
	return parseText(r.Body)
}

// parseText parses the text format 0.0.4 with legacy names and checks that no
// family holds the same label set twice.
func parseText(body []byte) (families, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parse scrape: %w\n%s", err, clip(body))
	}
	if err := checkNoDuplicates(mfs); err != nil {
		return nil, err
	}
	return mfs, nil
}

// checkNoDuplicates reports a family with two series of the same label set.
func checkNoDuplicates(mfs map[string]*dto.MetricFamily) error {
	for name, mf := range mfs {
		seen := map[string]bool{}
		for _, m := range mf.GetMetric() {
			k := labelString(m.GetLabel())
			if seen[k] {
				return fmt.Errorf("family %s has series %s twice", name, k)
			}
			seen[k] = true
		}
	}
	return nil
}

// clip shortens a body for messages.
func clip(b []byte) string {
	if len(b) > 4096 {
		return string(b[:4096]) + "…"
	}
	return string(b)
}

// labelString renders label pairs sorted, for messages and comparisons.
func labelString(lps []*dto.LabelPair) string {
	parts := make([]string, 0, len(lps))
	for _, lp := range lps {
		parts = append(parts, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// lbl builds a label map from name, value pairs.
func lbl(pairs ...string) map[string]string {
	m := make(map[string]string, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return m
}

// labelsEqual reports whether lps is exactly the label set want.
func labelsEqual(lps []*dto.LabelPair, want map[string]string) bool {
	if len(lps) != len(want) {
		return false
	}
	for _, lp := range lps {
		v, ok := want[lp.GetName()]
		if !ok || v != lp.GetValue() {
			return false
		}
	}
	return true
}

// find returns the series of family name with exactly the labels want, or nil.
func (f families) find(name string, want map[string]string) *dto.Metric {
	for _, m := range f[name].GetMetric() {
		if labelsEqual(m.GetLabel(), want) {
			return m
		}
	}
	return nil
}

// series returns all series of family name whose labels include want.
func (f families) series(name string, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range f[name].GetMetric() {
		ok := true
		for k, v := range want {
			if labelValue(m, k) != v || !hasLabel(m, k) {
				ok = false
			}
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

// hasLabel reports whether m has a label called name.
func hasLabel(m *dto.Metric, name string) bool {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return true
		}
	}
	return false
}

// labelValue returns the value of label name on m ("" when absent).
func labelValue(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

// require returns the series of family name with exactly the labels want and
// fails the test when there is none.
func (f families) require(t *testing.T, name string, want map[string]string) *dto.Metric {
	t.Helper()
	m := f.find(name, want)
	if m == nil {
		var have []string
		for _, m := range f[name].GetMetric() {
			have = append(have, labelString(m.GetLabel()))
		}
		t.Fatalf("series %s%v not found; family has %v", name, want, have)
	}
	return m
}

// requireValue checks a gauge, counter or untyped series' value.
func (f families) requireValue(t *testing.T, name string, want map[string]string, value float64) {
	t.Helper()
	m := f.require(t, name, want)
	if got := sampleValue(m); got != value {
		t.Fatalf("series %s%v = %v, want %v", name, want, got, value)
	}
}

// requireAbsent fails when family name has any series whose labels include
// want.
func (f families) requireAbsent(t *testing.T, name string, want map[string]string) {
	t.Helper()
	if s := f.series(name, want); len(s) > 0 {
		t.Fatalf("series %s%v should be absent, found %s", name, want, labelString(s[0].GetLabel()))
	}
}

// sampleValue returns the value of a gauge, counter or untyped series.
func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}

// pushedNames returns the names of families that are not the gateway's own
// (go_*, process_*, pushgateway_*, promhttp_*, and pushgate's own pushgate_*).
func (f families) pushedNames() []string {
	var names []string
	for name := range f {
		if isOwnMetric(name) {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// isOwnMetric reports whether name belongs to the gateway's own metrics.
func isOwnMetric(name string) bool {
	for _, p := range []string{"go_", "process_", "pushgateway_", "pushgate_", "promhttp_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// pushedDump renders the pushed families (not the gateway's own) as sorted
// text lines, for comparing store contents before and after a request.
func (f families) pushedDump() string {
	var lines []string
	for _, name := range f.pushedNames() {
		mf := f[name]
		for _, m := range mf.GetMetric() {
			lines = append(lines, fmt.Sprintf("%s %s %s %s", name, mf.GetType(), labelString(m.GetLabel()), m.String()))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// waitTimeout bounds polls for state that the gateway should show at once
// (the reference applies deletes asynchronously, hence polls at all).
const waitTimeout = 10 * time.Second

// errorf is fmt.Errorf, short for conditions polled by eventually.
var errorf = fmt.Errorf

// eventually polls cond every 20 ms until it returns nil or timeout passes,
// then fails with the last error.
func eventually(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// requireOneLine checks that an error body is a single non-empty line
// (a trailing newline allowed).
func requireOneLine(t *testing.T, r response) {
	t.Helper()
	s := strings.TrimSuffix(string(r.Body), "\n")
	if s == "" || strings.Contains(s, "\n") {
		t.Fatalf("error body should be one non-empty line, got %q", r.Body)
	}
}

// requireNoDataRace fails when the process log contains a race report.
func requireNoDataRace(t *testing.T, p *process) {
	t.Helper()
	if strings.Contains(p.log(), "WARNING: DATA RACE") {
		t.Fatalf("the gateway reported a data race:\n%s", p.logTail(32<<10))
	}
}
