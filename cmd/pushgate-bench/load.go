package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pushgate/pushgate/bench/payload"
)

// newHTTPClient returns a keep-alive client sized for clients concurrent
// workers against one host: every worker keeps its own idle connection, so
// no request pays for a new TCP handshake once the run is warm. With fresh,
// every request opens and closes its own connection instead, which is what
// a batch job that pushes once before it exits costs a gateway. Compression
// is left to the caller so that scrapes measure the wire bytes, and every
// dial is re-checked for a loopback address.
func newHTTPClient(clients int, timeout time.Duration, fresh bool) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second, Control: dialControl}
	tr := &http.Transport{
		DialContext:         dialer.DialContext,
		MaxIdleConns:        clients + 4,
		MaxIdleConnsPerHost: clients + 4,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		WriteBufferSize:     64 << 10,
		ReadBufferSize:      64 << 10,
		DisableKeepAlives:   fresh,
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}

// bodies is a fixed pool of pre-rendered pushes. Rendering a 6.9 KB push
// costs about 11 µs; doing it per request would put the load generator's
// own CPU use into a measurement made on 2 shared cores, so the pool is
// rendered once and requests pick from it, which still varies the values
// from one push to the next.
type bodies struct {
	data        [][]byte
	contentType string
	format      string
	// otlp bodies are OTLP/HTTP requests: POSTed to the group's OTLP
	// path (/otlp/job/…/v1/metrics) whatever -method says.
	otlp bool
}

// newBodies renders n pushes in format text, protobuf, otlp (OTLP/HTTP
// protobuf) or otlp-json (OTLP JSON), each the same 74 samples.
func newBodies(format string, n int) (bodies, error) {
	b := bodies{data: make([][]byte, 0, n), format: format}
	render := func(i int) ([]byte, error) { return payload.Text(i, i+1), nil }
	// OTLP points carry a timestamp; the one of the run's start is well
	// within the 10 minutes ahead a translation allows.
	now := time.Now()
	switch format {
	case "text":
		b.contentType = payload.TextContentType
	case "protobuf":
		b.contentType = payload.ProtobufContentType
		render = func(i int) ([]byte, error) { return payload.Protobuf(i, i+1) }
	case "otlp":
		b.contentType, b.otlp = payload.OTLPProtobufContentType, true
		render = func(i int) ([]byte, error) { return payload.OTLPProtobuf(i, i+1, now) }
	case "otlp-json":
		b.contentType, b.otlp = payload.OTLPJSONContentType, true
		render = func(i int) ([]byte, error) { return payload.OTLPJSON(i, i+1, now) }
	default:
		return b, fmt.Errorf("unknown push format %q (want text, protobuf, otlp or otlp-json)", format)
	}
	for i := range n {
		p, err := render(i)
		if err != nil {
			return b, fmt.Errorf("render %s push %d: %w", format, i, err)
		}
		b.data = append(b.data, p)
	}
	return b, nil
}

// method returns the method pushes of b are sent with, given -method.
func (b bodies) method(flag string) string {
	if b.otlp {
		return http.MethodPost
	}
	return flag
}

// groupPath returns the push path of bench group index idx.
func groupPath(base *url.URL, idx int) string {
	return base.Path + "/metrics/job/" + payload.Job + "/instance/i" + strconv.Itoa(idx)
}

// otlpGroupPath returns the OTLP path of bench group index idx: the same
// group as groupPath's.
func otlpGroupPath(base *url.URL, idx int) string {
	return base.Path + "/otlp/job/" + payload.Job + "/instance/i" + strconv.Itoa(idx) + "/v1/metrics"
}

// tally is one worker's outcome; workers never share one, so recording
// needs no locks.
type tally struct {
	lat      *latencies
	status   map[int]int64
	ok       int64
	errors   int64
	lastErr  error
	requests int64
}

func newTally(capacity int) *tally {
	return &tally{lat: newLatencies(capacity), status: make(map[int]int64)}
}

// sum merges worker tallies into a result's counters and latencies.
func sum(r *result, ts []*tally, elapsed time.Duration) error {
	status := make(map[int]int64)
	lats := make([]*latencies, 0, len(ts))
	var lastErr error
	for _, t := range ts {
		r.Requests += t.requests
		r.Errors += t.errors
		for k, v := range t.status {
			status[k] += v
		}
		lats = append(lats, t.lat)
		if t.lastErr != nil {
			lastErr = t.lastErr
		}
	}
	r.fillLatency(merge(lats...), status, elapsed)
	return lastErr
}

// pusher sends pushes of one method to bench groups.
type pusher struct {
	client *http.Client
	base   *url.URL
	// spread, when it holds several URLs, sends group idx's pushes to
	// spread[idx % len(spread)]: the replicas of a cluster.
	spread []*url.URL
	method string
	bodies bodies
}

// push sends one push of body to group idx and records its outcome in t.
// A request cut short by the run's own deadline or cancellation is not
// counted at all, so the end of a timed run does not show up as errors.
func (p pusher) push(ctx context.Context, t *tally, idx int, body []byte) {
	base := p.base
	if len(p.spread) > 1 {
		base = p.spread[idx%len(p.spread)]
	}
	u := *base
	u.Path = groupPath(base, idx)
	method := p.method
	if p.bodies.otlp {
		u.Path, method = otlpGroupPath(base, idx), http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		t.requests++
		t.errors++
		t.lastErr = fmt.Errorf("build request: %w", err)
		return
	}
	req.Header.Set("Content-Type", p.bodies.contentType)
	start := time.Now()
	resp, err := p.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		t.requests++
		t.errors++
		t.lastErr = fmt.Errorf("%s %s: %w", method, u.Path, err)
		return
	}
	_, cerr := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	elapsed := time.Since(start)
	if cerr != nil && ctx.Err() != nil {
		return
	}
	t.requests++
	t.lat.record(elapsed)
	t.status[resp.StatusCode]++
	if resp.StatusCode/100 != 2 || cerr != nil {
		t.errors++
		t.lastErr = fmt.Errorf("%s %s: status %d", method, u.Path, resp.StatusCode)
		return
	}
	t.ok++
}

// runPushes makes clients workers push to random groups in [0, groups)
// until maxRequests requests were issued or the deadline of ctx passed.
func runPushes(ctx context.Context, p pusher, groups, clients int, maxRequests int64) ([]*tally, time.Duration) {
	var issued atomic.Int64
	ts := make([]*tally, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range clients {
		ts[w] = newTally(int(maxRequests))
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w)+1, uint64(start.UnixNano())))
			for ctx.Err() == nil && issued.Add(1) <= maxRequests {
				idx := rng.IntN(groups)
				p.push(ctx, ts[w], idx, p.bodies.data[rng.IntN(len(p.bodies.data))])
			}
		})
	}
	wg.Wait()
	return ts, time.Since(start)
}

// runFill makes clients workers PUT groups start … start+groups-1, each
// once, until all were sent or the deadline of ctx passed.
func runFill(ctx context.Context, p pusher, start, groups, clients int) ([]*tally, time.Duration) {
	var next atomic.Int64
	ts := make([]*tally, clients)
	var wg sync.WaitGroup
	began := time.Now()
	for w := range clients {
		ts[w] = newTally(groups)
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= groups {
					return
				}
				p.push(ctx, ts[w], start+i, p.bodies.data[i%len(p.bodies.data)])
			}
		})
	}
	wg.Wait()
	return ts, time.Since(began)
}

// acceptAliases maps the -accept shorthands to the Accept header a scraper
// of that kind sends.
func acceptAliases() map[string]string {
	return map[string]string{
		"text":        "text/plain;version=0.0.4",
		"text1":       "text/plain;version=1.0.0",
		"openmetrics": "application/openmetrics-text;version=1.0.0",
		"protobuf":    "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited",
		// Prometheus 3's default scrape_protocols, in its order and weights.
		"prom3": "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1",
	}
}

// resolveAccept turns an alias into its header; anything else is taken as
// a literal Accept header.
func resolveAccept(a string) string {
	if h, ok := acceptAliases()[a]; ok {
		return h
	}
	return a
}

// scraper fetches the exposition page.
type scraper struct {
	client *http.Client
	url    string
	accept string
	gzip   bool
}

// scrape GETs the page once, reading the body into buf-sized chunks, and
// returns the wire bytes read.
func (s scraper) scrape(ctx context.Context, buf []byte) (int64, *http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return 0, nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", s.accept)
	if s.gzip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("GET %s: %w", s.url, err)
	}
	defer resp.Body.Close()
	var n int64
	for {
		k, err := resp.Body.Read(buf)
		n += int64(k)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, resp, fmt.Errorf("read %s: %w", s.url, err)
		}
	}
	if resp.StatusCode != http.StatusOK {
		return n, resp, fmt.Errorf("GET %s: status %d", s.url, resp.StatusCode)
	}
	return n, resp, nil
}

// probe makes one untimed scrape that warms the connection and learns the
// response's Content-Type, wire size and decoded size; if save is set, it
// writes the body as received to that file.
func (s scraper) probe(ctx context.Context, save string) (ct string, wire, decoded int64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return "", 0, 0, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", s.accept)
	if s.gzip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return "", 0, 0, fmt.Errorf("GET %s: %w", s.url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", 0, 0, fmt.Errorf("read %s: %w", s.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", 0, 0, fmt.Errorf("GET %s: status %d: %.200s", s.url, resp.StatusCode, raw)
	}
	if save != "" {
		if err := os.WriteFile(save, raw, 0o644); err != nil {
			return "", 0, 0, fmt.Errorf("save scrape body: %w", err)
		}
	}
	decoded = int64(len(raw))
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return "", 0, 0, fmt.Errorf("gunzip %s: %w", s.url, err)
		}
		decoded, err = io.Copy(io.Discard, zr)
		if err != nil {
			return "", 0, 0, fmt.Errorf("gunzip %s: %w", s.url, err)
		}
	}
	return resp.Header.Get("Content-Type"), int64(len(raw)), decoded, nil
}

// runScrapes makes clients workers scrape until count scrapes were issued
// or the deadline of ctx passed, and returns their tallies and the total
// wire bytes. With an interval, each worker starts a scrape at most once per
// interval, as Prometheus does; without one, back to back.
func runScrapes(ctx context.Context, s scraper, clients, count int, interval time.Duration) ([]*tally, int64, time.Duration) {
	var issued atomic.Int64
	var total atomic.Int64
	ts := make([]*tally, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range clients {
		ts[w] = newTally(count)
		wg.Go(func() {
			buf := make([]byte, 256<<10)
			t := ts[w]
			next := time.Now()
			for ctx.Err() == nil && issued.Add(1) <= int64(count) {
				if interval > 0 {
					if !sleepUntil(ctx, next) {
						return
					}
					next = next.Add(interval)
				}
				begin := time.Now()
				n, resp, err := s.scrape(ctx, buf)
				elapsed := time.Since(begin)
				if err != nil && ctx.Err() != nil {
					return
				}
				t.requests++
				total.Add(n)
				if resp != nil {
					t.status[resp.StatusCode]++
				}
				if err != nil {
					t.errors++
					t.lastErr = err
					continue
				}
				t.lat.record(elapsed)
			}
		})
	}
	wg.Wait()
	return ts, total.Load(), time.Since(start)
}

// sleepUntil waits until t or the end of ctx, and reports whether t came
// first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
