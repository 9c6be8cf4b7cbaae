package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"
)

// Abuse tests: hostile clients against the built gateway. Every case starts
// a fresh gateway, pushes a few groups, abuses it while a healthy client
// keeps pushing and scraping, and then requires that the gateway is still
// up, answers the healthy client within livenessBound, holds exactly the
// groups pushed before, and that its peak RSS (VmHWM) stayed under the
// case's bound. Each case logs its peak as one greppable line:
//
//	abuse peak: case=<name> vmhwm_mib=<n>

// livenessBound is how long a healthy push or scrape may take during and
// after abuse. It is a liveness check, not a performance assertion: on 2
// shared cores a healthy request takes milliseconds.
const livenessBound = 10 * time.Second

// livenessClient is the healthy client; its own connections, never shared
// with the abusers.
var livenessClient = &http.Client{
	Timeout:   livenessBound,
	Transport: &http.Transport{DisableCompression: true},
}

// abusePrePushed are the groups pushed before every case, by path.
var abusePrePushed = map[string]string{
	"/metrics/job/pre-a":                  "# TYPE pre_value gauge\npre_value{k=\"1\"} 1\npre_value{k=\"2\"} NaN\n",
	"/metrics/job/pre-b/instance/x":       "# TYPE pre_total counter\npre_total 42\n# TYPE pre_hist histogram\npre_hist_bucket{le=\"1\"} 1\npre_hist_bucket{le=\"+Inf\"} 2\npre_hist_sum 3\npre_hist_count 2\n",
	"/metrics/job@base64/cHJlL2M/v/w%20x": "# HELP pre_value A value.\n# TYPE pre_value gauge\npre_value{k=\"3\"} -Inf\n",
}

// abuseTarget is a gateway under abuse with what it held before.
type abuseTarget struct {
	*gateway
	before string
}

// startAbuseTarget starts a fresh gateway with the default limits and pushes
// the pre-pushed groups.
func startAbuseTarget(t *testing.T, flags ...string) *abuseTarget {
	t.Helper()
	g := startGateway(t, flags...)
	for path, body := range abusePrePushed {
		pushText(t, g, http.MethodPut, path, body)
	}
	return &abuseTarget{gateway: g, before: prePushedDump(t, g)}
}

// prePushedDump returns the scraped series of the pre-pushed groups (the
// push time included: a rejected request must not touch it).
func prePushedDump(t *testing.T, g *gateway) string {
	t.Helper()
	var lines []string
	for _, line := range strings.Split(scrape(t, g).pushedDump(), "\n") {
		if strings.Contains(line, `job="pre-a"`) || strings.Contains(line, `job="pre-b"`) || strings.Contains(line, `job="pre/c"`) {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "\n")
}

// finish checks the gateway after the abuse: still running, healthy, the
// pre-pushed groups unchanged, and VmHWM under maxMiB, which it logs.
func (a *abuseTarget) finish(t *testing.T, name string, maxMiB int) {
	t.Helper()
	if a.exited() {
		t.Fatalf("the gateway exited during the abuse")
	}
	// A group of its own: a push of the abuse-time loop, cancelled by the
	// client but already received, may still land after this one.
	if err := healthyRound(context.Background(), a.gateway, "healthy-after", 0); err != nil {
		t.Fatalf("healthy client after the abuse: %v", err)
	}
	if after := prePushedDump(t, a.gateway); after != a.before {
		t.Fatalf("pre-pushed groups changed:\nbefore:\n%s\nafter:\n%s", a.before, after)
	}
	hwm, err := vmHWM(a.cmd.Process.Pid)
	if err != nil {
		t.Fatalf("peak RSS: %v", err)
	}
	t.Logf("abuse peak: case=%s vmhwm_mib=%d", name, hwm>>20)
	if hwm>>20 > int64(maxMiB) {
		t.Errorf("peak RSS %d MiB exceeds the bound of %d MiB", hwm>>20, maxMiB)
	}
	requireNoDataRace(t, a.process)
}

// vmHWM reads the peak resident set size of a process, in bytes.
func vmHWM(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmHWM %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("no VmHWM in /proc/<pid>/status")
}

// healthyRound is one healthy client's push to group job and scrape, each
// within livenessBound; i makes every push's value differ.
func healthyRound(ctx context.Context, g *gateway, job string, i int) error {
	body := fmt.Sprintf("# TYPE healthy_value gauge\nhealthy_value %d\n", i)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, g.url("/metrics/job/"+job), strings.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := livenessClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthy push: %w", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthy push: status %d", resp.StatusCode)
	}
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, g.url("/metrics"), nil)
	if err != nil {
		return err
	}
	resp, err = livenessClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthy scrape: %w", err)
	}
	defer resp.Body.Close()
	// Read, not parse: during the million-series case the scrape is large,
	// and parsing it under -race says nothing about the server.
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("healthy scrape: %w", err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(fmt.Sprintf("healthy_value{instance=\"\",job=%q} %d\n", job, i))) {
		return fmt.Errorf("healthy scrape: status %d, pushed value %d not found", resp.StatusCode, i)
	}
	return nil
}

// duringAbuse runs healthy rounds until the returned stop function is
// called, which fails the test if any round failed and logs the slowest.
func duringAbuse(t *testing.T, g *gateway) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		firstEr error
		rounds  int
		slowest time.Duration
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; ctx.Err() == nil && i < 10000; i++ {
			start := time.Now()
			err := healthyRound(ctx, g, "healthy", i)
			d := time.Since(start)
			mu.Lock()
			if err != nil && ctx.Err() == nil && firstEr == nil {
				firstEr = err
			}
			if err == nil {
				rounds++
				slowest = max(slowest, d)
			}
			mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return func() {
		t.Helper()
		cancel()
		wg.Wait()
		t.Logf("healthy client during the abuse: %d rounds, slowest %v", rounds, slowest.Round(time.Millisecond))
		if firstEr != nil {
			t.Fatalf("healthy client during the abuse: %v", firstEr)
		}
	}
}

// sendBody PUTs body to path with the given headers on a client of its own
// and returns the status. A server that answers before the whole body was
// sent may close the connection; the transport then reports the answer.
func sendBody(t *testing.T, g *gateway, path string, body io.Reader, header ...string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, g.url(path), body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(b), nil
}

// repeatReader yields chunk again and again until maxBytes or the deadline,
// then EOF; it counts what was read.
type repeatReader struct {
	chunk    []byte
	off      int
	left     int64
	deadline time.Time
	sent     atomic.Int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.left <= 0 || time.Now().After(r.deadline) {
		return 0, io.EOF
	}
	n := copy(p, r.chunk[r.off:])
	if int64(n) > r.left {
		n = int(r.left)
	}
	r.off = (r.off + n) % len(r.chunk)
	r.left -= int64(n)
	r.sent.Add(int64(n))
	return n, nil
}

// TestAbuseGzipBomb sends 10 GiB of newlines (a valid, empty text body if
// it were allowed to end) gzip-compressed to about 10 MB: the gateway must
// stop decompressing at --push.max-body-bytes (64 MiB) and answer 413.
func TestAbuseGzipBomb(t *testing.T) {
	a := startAbuseTarget(t)
	// One gzip member of 1 MiB of newlines (about 1 KB), repeated:
	// concatenated members are one valid gzip stream, and compressing a
	// small member once keeps the test cheap (64 MiB at BestCompression
	// took 50 s under -race).
	const memberBytes = 1 << 20
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	zw.Write(bytes.Repeat([]byte("\n"), memberBytes))
	zw.Close()
	members := (10 << 30) / memberBytes
	t.Logf("gzip bomb: %d members of %d bytes = %.1f MB compressed, 10 GiB decompressed", members, member.Len(), float64(members*member.Len())/1e6)

	stop := duringAbuse(t, a.gateway)
	body := &repeatReader{chunk: member.Bytes(), left: int64(members * member.Len()), deadline: time.Now().Add(60 * time.Second)}
	code, reason, err := sendBody(t, a.gateway, "/metrics/job/abuse", body, "Content-Encoding", "gzip")
	stop()
	if err != nil {
		t.Fatalf("gzip bomb: no answer (%d compressed bytes sent): %v", body.sent.Load(), err)
	}
	t.Logf("gzip bomb: %d %q after %d compressed bytes sent", code, strings.TrimSpace(reason), body.sent.Load())
	if code != http.StatusRequestEntityTooLarge {
		t.Fatalf("gzip bomb: got %d %q, want 413", code, reason)
	}
	a.finish(t, "gzip-bomb", 256)
}

// TestAbuseEndlessChunkedBody sends a chunked body that would never end
// (comment lines, bounded here by 30 s and 512 MiB): the gateway must stop
// it at the body limit with 413.
func TestAbuseEndlessChunkedBody(t *testing.T) {
	a := startAbuseTarget(t)
	stop := duringAbuse(t, a.gateway)
	const bound = 512 << 20
	body := &repeatReader{chunk: bytes.Repeat([]byte("# this body never ends\n"), 1<<12), left: bound, deadline: time.Now().Add(30 * time.Second)}
	// A reader the transport cannot size: the body goes out chunked.
	code, reason, err := sendBody(t, a.gateway, "/metrics/job/abuse", io.MultiReader(body))
	stop()
	if err != nil {
		t.Fatalf("endless body: no answer (%d bytes sent): %v", body.sent.Load(), err)
	}
	t.Logf("endless body: %d %q after %d bytes sent", code, strings.TrimSpace(reason), body.sent.Load())
	if code != http.StatusRequestEntityTooLarge {
		t.Fatalf("endless body: got %d %q, want 413", code, reason)
	}
	// The transport may still be writing the body: read only the atomic
	// count, not the reader's own fields.
	if body.sent.Load() >= bound || time.Now().After(body.deadline) {
		t.Fatalf("the gateway read the whole bounded body (%d bytes) instead of stopping at its limit", body.sent.Load())
	}
	a.finish(t, "endless-chunked", 256)
}

// TestAbuseSlowConnections opens 1,000 connections that each trickle a
// request's headers at one byte a second for 15 s while a healthy client
// pushes and scrapes.
func TestAbuseSlowConnections(t *testing.T) {
	// The gateway runs with a short header timeout: every slow connection
	// must be closed by it (within the bound below), and a healthy client
	// is served meanwhile. A fixed trickle shorter than the default 30 s
	// timeout proved only that the gateway survives, in 15 s.
	const headerTimeout, bound = 3 * time.Second, 30 * time.Second
	conns := 1000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("getrlimit: %v", err)
	}
	// This process and the gateway (which inherits the limit) each need a
	// descriptor per connection, plus some to spare.
	if avail := int(lim.Cur) - 200; avail < conns {
		t.Logf("LOUD: ulimit -n is %d; lowering the slow connections from %d to %d", lim.Cur, conns, max(avail, 10))
		conns = max(avail, 10)
	}
	a := startAbuseTarget(t, "--web.read-header-timeout="+headerTimeout.String())

	request := []byte("PUT /metrics/job/slow HTTP/1.1\r\nHost: " + a.Addr + "\r\nX-Slow: " + strings.Repeat("s", 64) + "\r\n")
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	var (
		wg       sync.WaitGroup
		open     atomic.Int64
		dialErrs atomic.Int64
		closedBy atomic.Int64
	)
	dialer := net.Dialer{Timeout: 5 * time.Second}
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, err := dialer.DialContext(ctx, "tcp", a.Addr)
			if err != nil {
				dialErrs.Add(1)
				return
			}
			defer c.Close()
			open.Add(1)
			// Spread the writes over the second.
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(i) * time.Second / time.Duration(conns)):
			}
			for j := 0; ; j++ {
				if _, err := c.Write(request[j%len(request) : j%len(request)+1]); err != nil {
					closedBy.Add(1)
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		}(i)
	}
	// Wait until the connections are open before judging the healthy client.
	eventually(t, 30*time.Second, func() error {
		if n := open.Load() + dialErrs.Load(); n < int64(conns) {
			return errorf("%d of %d connections dialed", n, conns)
		}
		return nil
	})
	stop := duringAbuse(t, a.gateway)
	started := time.Now()
	wg.Wait()
	stop()
	t.Logf("slow connections: %d opened, %d dial errors, %d closed by the server in %v", open.Load(), dialErrs.Load(), closedBy.Load(), time.Since(started).Round(time.Millisecond))
	if dialErrs.Load() > 0 {
		t.Errorf("%d of %d slow connections could not even connect", dialErrs.Load(), conns)
	}
	if closedBy.Load() != open.Load() {
		t.Errorf("%d of %d slow connections were still open after %v; --web.read-header-timeout=%v should have closed them", open.Load()-closedBy.Load(), open.Load(), bound, headerTimeout)
	}
	a.finish(t, "slow-connections", 256)
}

// TestAbuseMillionSeries pushes one text body of a million series (~33 MB):
// the decoder stops at --push.max-series, so the peak stays near the body
// size (118 MiB measured) instead of the ~1.1 GiB of building every series.
func TestAbuseMillionSeries(t *testing.T) {
	a := startAbuseTarget(t)
	var body bytes.Buffer
	body.Grow(27 << 20)
	body.WriteString("# TYPE abuse_series gauge\n")
	for i := 0; i < 1_000_000; i++ {
		fmt.Fprintf(&body, "abuse_series{i=\"%07d\"} %d\n", i, i)
	}
	t.Logf("million series: %.1f MB body", float64(body.Len())/1e6)

	stop := duringAbuse(t, a.gateway)
	code, reason, err := sendBody(t, a.gateway, "/metrics/job/abuse-million", &body)
	stop()
	if err != nil {
		t.Fatalf("million series: %v", err)
	}
	t.Logf("million series: %d %q", code, strings.TrimSpace(reason))
	// --push.max-series (default 100000) stops the decoder early: the
	// body is refused and never built into a million series.
	if code != http.StatusBadRequest || !strings.Contains(reason, "--push.max-series") {
		t.Fatalf("million series: got %d %q, want 400 naming --push.max-series", code, reason)
	}
	requireOneLine(t, response{Status: code, Body: []byte(reason)})
	a.finish(t, "million-series", 256)
}

// TestAbuseMalformedUTF8 sends invalid UTF-8 in every place a push carries
// text. Where the format forbids it, the answer is a 4xx with a one-line
// reason and nothing changes. Where it allows arbitrary bytes (the text
// format's HELP, the Content-Type, which like the reference's falls back to
// the text format when it does not parse), the reference's behaviour is
// kept: the push is accepted and the scrape still parses.
func TestAbuseMalformedUTF8(t *testing.T) {
	a := startAbuseTarget(t)
	const bad = "\xff\xfe"
	b64 := base64.RawURLEncoding.EncodeToString([]byte(bad))
	protoBody := func(mf *dto.MetricFamily) []byte {
		var b bytes.Buffer
		if _, err := protodelim.MarshalTo(&b, mf); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	gauge := func(name, help string, labels ...string) *dto.MetricFamily {
		m := &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(1)}}
		for i := 0; i+1 < len(labels); i += 2 {
			m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(labels[i]), Value: proto.String(labels[i+1])})
		}
		return &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{m}}
	}
	const protoType = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"
	cases := []struct {
		name   string
		path   string
		body   []byte
		header []string
		accept bool // the format allows these bytes; accepted as the reference does
	}{
		{name: "percent-encoded label value", path: "/metrics/job/abuse/a/%FF%FE", body: []byte("m 1\n")},
		{name: "percent-encoded job", path: "/metrics/job/%FF", body: []byte("m 1\n")},
		{name: "percent-encoded label name", path: "/metrics/job/abuse/%FFa/v", body: []byte("m 1\n")},
		{name: "base64 label value", path: "/metrics/job/abuse/a@base64/" + b64, body: []byte("m 1\n")},
		{name: "base64 job", path: "/metrics/job@base64/" + b64, body: []byte("m 1\n")},
		{name: "text label value", path: "/metrics/job/abuse", body: []byte("m{a=\"" + bad + "\"} 1\n")},
		{name: "text label name", path: "/metrics/job/abuse", body: []byte("m{" + bad + "=\"1\"} 1\n")},
		{name: "text metric name", path: "/metrics/job/abuse", body: []byte("m" + bad + " 1\n")},
		{name: "text TYPE name", path: "/metrics/job/abuse", body: []byte("# TYPE m" + bad + " gauge\nm 1\n")},
		{name: "protobuf label value", path: "/metrics/job/abuse", body: protoBody(gauge("m", "", "a", bad)), header: []string{"Content-Type", protoType}},
		{name: "protobuf label name", path: "/metrics/job/abuse", body: protoBody(gauge("m", "", "a"+bad, "v")), header: []string{"Content-Type", protoType}},
		{name: "protobuf metric name", path: "/metrics/job/abuse", body: protoBody(gauge("m"+bad, "")), header: []string{"Content-Type", protoType}},
		{name: "Content-Encoding", path: "/metrics/job/abuse", body: []byte("m 1\n"), header: []string{"Content-Encoding", "gzip" + bad}},
		{name: "text HELP", path: "/metrics/job/abuse", body: []byte("# HELP m help " + bad + "\nm 1\n"), accept: true},
		{name: "protobuf HELP", path: "/metrics/job/abuse", body: protoBody(gauge("m", "help "+bad)), header: []string{"Content-Type", protoType}, accept: true},
		{name: "Content-Type", path: "/metrics/job/abuse", body: []byte("m 1\n"), header: []string{"Content-Type", "text/plain; charset=" + bad}, accept: true},
		{name: "other header", path: "/metrics/job/abuse", body: []byte("m 1\n"), header: []string{"X-Client", bad}, accept: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, http.MethodPut, a.url(tc.path), tc.body, tc.header...)
			if tc.accept {
				if r.Status != http.StatusOK && (r.Status < 400 || r.Status >= 500) {
					t.Fatalf("got %s, want 200 or a 4xx", r)
				}
				t.Logf("%s with invalid UTF-8: %s", tc.name, r)
				scrape(t, a.gateway) // Parses, or fails the test.
				mustStatus(t, http.StatusAccepted, http.MethodDelete, a.url("/metrics/job/abuse"), nil)
				return
			}
			if r.Status < 400 || r.Status >= 500 {
				t.Fatalf("got %s, want a 4xx", r)
			}
			requireOneLine(t, r)
			t.Logf("%s: %s", tc.name, r)
		})
	}
	// Raw bytes where an HTTP client would escape them: in the request line
	// and in a header name.
	for _, raw := range []struct{ name, request string }{
		{"raw bytes in the path", "PUT /metrics/job/abuse/a/" + bad + " HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nm 1\n"},
		{"raw bytes in a header name", "PUT /metrics/job/abuse HTTP/1.1\r\nHost: x\r\nX-" + bad + ": 1\r\nContent-Length: 4\r\n\r\nm 1\n"},
	} {
		t.Run(raw.name, func(t *testing.T) {
			code, line := rawRequest(t, a.Addr, raw.request)
			t.Logf("%s: %d %q", raw.name, code, line)
			if code < 400 || code >= 500 {
				t.Fatalf("got %d, want a 4xx", code)
			}
		})
	}
	if r := do(t, http.MethodGet, a.url("/api/v1/metrics"), nil); r.Status != http.StatusOK || bytes.Contains(r.Body, []byte(`"abuse"`)) {
		t.Fatalf("the abuse group exists after the cases: %s", r)
	}
	a.finish(t, "malformed-utf8", 256)
}

// rawRequest writes request on a fresh connection and returns the answer's
// status code and status line.
func rawRequest(t *testing.T, addr, request string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(livenessBound))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	fields := strings.Fields(line)
	if len(fields) < 2 {
		t.Fatalf("bad status line %q", line)
	}
	code, err := strconv.Atoi(fields[1])
	if err != nil {
		t.Fatalf("bad status line %q", line)
	}
	return code, strings.TrimSpace(line)
}
