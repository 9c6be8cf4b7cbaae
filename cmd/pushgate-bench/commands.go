package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Limits on every knob, so that no invocation can run unbounded.
const (
	maxClients     = 1024
	maxGroups      = 10_000_000
	maxRequestsCap = 5_000_000 // 40 MB of exact latencies
	maxScrapes     = 100_000
	maxDuration    = 6 * time.Hour
	bodyPool       = 256
)

// common holds the flags every load subcommand shares.
type common struct {
	url      string
	asJSON   bool
	out      string
	label    string
	name     string
	pid      int
	reqLimit time.Duration
	strict   bool
	fresh    bool
	// bases are the -url values: pushes spread over them (a cluster's
	// replicas); everything else uses the first.
	bases []*url.URL
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "url", "http://127.0.0.1:9091", "base URL of the gateway (loopback only); several comma-separated (a cluster's replicas): pushes spread over them by group, everything else uses the first")
	fs.BoolVar(&c.asJSON, "json", false, "print one JSON object per result instead of a table")
	fs.StringVar(&c.out, "o", "", "also append each result as a JSON line to this file")
	fs.StringVar(&c.label, "label", "", "name of the gateway in the results (e.g. pushgate, reference, null)")
	fs.StringVar(&c.name, "name", "", "name of the workload in the results (e.g. push-1000)")
	fs.IntVar(&c.pid, "pid", 0, "if set, add the VmRSS and VmHWM of this process to the result (and to a push result its CPU time per request)")
	fs.DurationVar(&c.reqLimit, "request-timeout", 2*time.Minute, "give up on one request after this long")
	fs.BoolVar(&c.strict, "strict", false, "exit with status 1 if any request failed or a fill did not finish")
	fs.BoolVar(&c.fresh, "fresh-conns", false, "open a new TCP connection for every request, as a batch job that pushes once and exits does (default: keep-alive)")
}

// target checks the URL and returns it with a client for clients workers.
func (c *common) target(ctx context.Context, clients int) (*url.URL, *http.Client, error) {
	c.bases = c.bases[:0]
	for _, raw := range strings.Split(c.url, ",") {
		u, err := parseTarget(ctx, strings.TrimSpace(raw), net.DefaultResolver.LookupIPAddr)
		if err != nil {
			return nil, nil, err
		}
		c.bases = append(c.bases, u)
	}
	u := c.bases[0]
	if c.reqLimit <= 0 || c.reqLimit > maxDuration {
		return nil, nil, fmt.Errorf("-request-timeout must be in (0, %s]: %w", maxDuration, errUsage)
	}
	return u, newHTTPClient(clients, c.reqLimit, c.fresh), nil
}

// emit finishes r with the shared fields and prints it.
func (c *common) emit(w io.Writer, r result) error {
	r.Target, r.Workload = c.label, c.name
	r.FreshConns = c.fresh
	if load, err := readLoad1(); err == nil {
		r.Load1 = load
	}
	if r.URL == "" {
		r.URL = c.url
	}
	if c.pid > 0 {
		m, err := readProcMemory(c.pid)
		if err != nil {
			return err
		}
		r.RSSKiB, r.HWMKiB = m.rssKiB, m.hwmKiB
	}
	if err := (reporter{w: w, asJSON: c.asJSON, file: c.out}).emit(r); err != nil {
		return err
	}
	if c.strict && r.Errors > 0 {
		return fmt.Errorf("%s: %d of %d requests failed (-strict)", r.Kind, r.Errors, r.Requests)
	}
	if c.strict && r.Finished != nil && !*r.Finished {
		return fmt.Errorf("fill reached %d of %d groups (-strict)", r.Reached, r.Groups)
	}
	return nil
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: %w", fs.Args(), errUsage)
	}
	return nil
}

func checkRange(name string, v, lo, hi int64) error {
	if v < lo || v > hi {
		return fmt.Errorf("-%s must be in [%d, %d], got %d: %w", name, lo, hi, v, errUsage)
	}
	return nil
}

func checkDuration(name string, d time.Duration) error {
	if d <= 0 || d > maxDuration {
		return fmt.Errorf("-%s must be in (0, %s], got %s: %w", name, maxDuration, d, errUsage)
	}
	return nil
}

func checkInterval(d time.Duration) error {
	if d < 0 || d > maxDuration {
		return fmt.Errorf("-scrape-interval must be in [0, %s], got %s: %w", maxDuration, d, errUsage)
	}
	return nil
}

func checkMethod(m string) error {
	if m != http.MethodPut && m != http.MethodPost {
		return fmt.Errorf("-method must be PUT or POST, got %q: %w", m, errUsage)
	}
	return nil
}

// cmdFill PUTs each of -groups groups once.
func cmdFill(ctx context.Context, args []string, w io.Writer, log *slog.Logger) error {
	fs := flag.NewFlagSet("fill", flag.ContinueOnError)
	var c common
	c.register(fs)
	groups := fs.Int("groups", 1000, "number of groups to PUT")
	start := fs.Int("start", 0, "index of the first group (instance i<start>)")
	clients := fs.Int("clients", 8, "concurrent clients")
	duration := fs.Duration("duration", 10*time.Minute, "stop after this long even if not all groups were pushed")
	format := fs.String("format", "text", "push body format: text or protobuf")
	check := fs.Bool("check", false, "after filling, scrape and count the bench groups the gateway exposes, retrying for up to 60 s until start+groups are there (a gateway that answers 202 may still be applying pushes)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := cmpErr(checkRange("groups", int64(*groups), 1, maxGroups), checkRange("start", int64(*start), 0, maxGroups),
		checkRange("clients", int64(*clients), 1, maxClients), checkDuration("duration", *duration)); err != nil {
		return err
	}
	base, client, err := c.target(ctx, *clients)
	if err != nil {
		return err
	}
	bs, err := newBodies(*format, bodyPool)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	runCtx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	log.Info("filling", "url", c.url, "groups", *groups, "start", *start, "clients", *clients, "limit", *duration)
	ts, elapsed := runFill(runCtx, pusher{client: client, base: base, spread: c.bases, method: http.MethodPut, bodies: bs}, *start, *groups, *clients)
	r := result{Kind: "fill", Groups: *groups, Clients: *clients, Method: http.MethodPut, Format: *format}
	lastErr := sum(&r, ts, elapsed)
	var ok int64
	for _, t := range ts {
		ok += t.ok
	}
	r.Reached = *start + int(ok) // the store's bench groups, if it started with start
	r.PerSec = float64(ok) / max(elapsed.Seconds(), 1e-9)
	finished := ok == int64(*groups)
	r.Finished = &finished
	if lastErr != nil {
		log.Warn("fill had errors", "errors", r.Errors, "last", lastErr)
	}
	if *check {
		// Wait only for the groups that were pushed: after an unfinished
		// fill there is nothing more to wait for.
		n, err := waitStored(ctx, client, base, *start+int(ok), log)
		if err != nil {
			return err
		}
		r.Stored = &n
	}
	if err := c.emit(w, r); err != nil {
		return err
	}
	if c.strict && r.Stored != nil && *r.Stored != *start+int(ok) {
		return fmt.Errorf("the gateway exposes %d bench groups, want %d (-strict)", *r.Stored, *start+int(ok))
	}
	return nil
}

// waitStored counts the stored bench groups until want are there, for at
// most a minute and ten attempts, and returns the last count.
func waitStored(ctx context.Context, client *http.Client, base *url.URL, want int, log *slog.Logger) (int, error) {
	deadline := time.Now().Add(time.Minute)
	n := 0
	for attempt := 1; attempt <= 10; attempt++ {
		var err error
		n, err = countStored(ctx, client, base)
		if err != nil {
			return 0, err
		}
		if n >= want || time.Now().After(deadline) {
			return n, nil
		}
		log.Info("waiting for the gateway to store every group", "stored", n, "want", want)
		select {
		case <-ctx.Done():
			return n, fmt.Errorf("check: %w", ctx.Err())
		case <-time.After(time.Second):
		}
	}
	return n, nil
}

// countStored scrapes the gateway once in text format and counts the
// push_time_seconds series of job "bench", one per stored group.
func countStored(ctx context.Context, client *http.Client, base *url.URL) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base.String()+"/metrics", nil)
	if err != nil {
		return 0, fmt.Errorf("build check request: %w", err)
	}
	req.Header.Set("Accept", resolveAccept("text"))
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("check scrape: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("check scrape: status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	prefix, job := []byte("push_time_seconds{"), []byte(`job="bench"`)
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(line, prefix) && bytes.Contains(line, job) {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("check scrape: read: %w", err)
	}
	return n, nil
}

// pushFlags are the flags of push and of mixed's push side.
type pushFlags struct {
	groups      *int
	maxRequests *int64
	method      *string
	format      *string
}

func registerPush(fs *flag.FlagSet) pushFlags {
	return pushFlags{
		groups:      fs.Int("groups", 1000, "push to random groups among this many (i0 … i<groups-1>)"),
		maxRequests: fs.Int64("max-requests", 1_000_000, "stop after this many requests"),
		method:      fs.String("method", "PUT", "PUT or POST"),
		format:      fs.String("format", "text", "push body format: text, protobuf, otlp (OTLP/HTTP protobuf, POSTed to /otlp/job/bench/instance/<i>/v1/metrics) or otlp-json"),
	}
}

func (p pushFlags) check() error {
	return cmpErr(checkRange("groups", int64(*p.groups), 1, maxGroups),
		checkRange("max-requests", *p.maxRequests, 1, maxRequestsCap), checkMethod(*p.method))
}

// cmdPush pushes to random groups for a duration.
func cmdPush(ctx context.Context, args []string, w io.Writer, log *slog.Logger) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	var c common
	c.register(fs)
	pf := registerPush(fs)
	clients := fs.Int("clients", 8, "concurrent clients")
	duration := fs.Duration("duration", 10*time.Second, "run for this long")
	cpuPids := fs.String("cpu-pids", "", "comma-separated role=PID pairs (role gateway:<name> or etcd:<name>): add each process's CPU time per request to the result, and the report their sums per category (a cluster's replicas and etcd members)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := cmpErr(pf.check(), checkRange("clients", int64(*clients), 1, maxClients), checkDuration("duration", *duration)); err != nil {
		return err
	}
	procs, err := parseCPUPids(*cpuPids)
	if err != nil {
		return err
	}
	base, client, err := c.target(ctx, *clients)
	if err != nil {
		return err
	}
	bs, err := newBodies(*pf.format, bodyPool)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	runCtx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	log.Info("pushing", "url", c.url, "groups", *pf.groups, "clients", *clients, "duration", *duration, "method", *pf.method, "format", *pf.format)
	var cpuBefore float64
	if c.pid > 0 {
		if cpuBefore, err = readProcCPU(c.pid); err != nil {
			return err
		}
	}
	procsBefore, err := readCPUs(procs)
	if err != nil {
		return err
	}
	ts, elapsed := runPushes(runCtx, pusher{client: client, base: base, spread: c.bases, method: *pf.method, bodies: bs}, *pf.groups, *clients, *pf.maxRequests)
	r := result{Kind: "push", Groups: *pf.groups, Clients: *clients, Method: bs.method(*pf.method), Format: *pf.format}
	if lastErr := sum(&r, ts, elapsed); lastErr != nil {
		log.Warn("push had errors", "errors", r.Errors, "last", lastErr)
	}
	if c.pid > 0 && r.Requests > 0 {
		// The server's CPU per push compares formats on a shared machine
		// better than pushes/s, which other processes' load moves.
		cpuAfter, err := readProcCPU(c.pid)
		if err != nil {
			return err
		}
		r.ServerCPUUs = (cpuAfter - cpuBefore) * 1e6 / float64(r.Requests)
	}
	if len(procs) > 0 && r.Requests > 0 {
		procsAfter, err := readCPUs(procs)
		if err != nil {
			return err
		}
		r.ProcessCPUUs = cpuPerRequest(procs, procsBefore, procsAfter, r.Requests)
	}
	return c.emit(w, r)
}

// scrapeFlags are the flags of scrape and of mixed's scrape side.
type scrapeFlags struct {
	accept *string
	gzip   *bool
	count  *int
}

func registerScrape(fs *flag.FlagSet, defaultCount int) scrapeFlags {
	return scrapeFlags{
		accept: fs.String("accept", "text", "Accept header, or an alias: "+strings.Join(aliasNames(), ", ")),
		gzip:   fs.Bool("gzip", false, "send Accept-Encoding: gzip (wire bytes are measured, not decompressed)"),
		count:  fs.Int("count", defaultCount, "stop after this many scrapes"),
	}
}

func aliasNames() []string {
	return []string{"text", "text1", "openmetrics", "protobuf", "prom3"}
}

// cmdScrape GETs /metrics repeatedly.
func cmdScrape(ctx context.Context, args []string, w io.Writer, log *slog.Logger) error {
	fs := flag.NewFlagSet("scrape", flag.ContinueOnError)
	var c common
	c.register(fs)
	sf := registerScrape(fs, 10)
	clients := fs.Int("clients", 1, "concurrent scrapers")
	duration := fs.Duration("duration", time.Minute, "stop after this long")
	save := fs.String("save", "", "write the body of the first (untimed) scrape, as received, to this file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := cmpErr(checkRange("count", int64(*sf.count), 1, maxScrapes), checkRange("clients", int64(*clients), 1, maxClients),
		checkDuration("duration", *duration)); err != nil {
		return err
	}
	base, client, err := c.target(ctx, *clients)
	if err != nil {
		return err
	}
	s := scraper{client: client, url: base.String() + "/metrics", accept: resolveAccept(*sf.accept), gzip: *sf.gzip}
	runCtx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	ct, wire, decoded, err := s.probe(runCtx, *save)
	if err != nil {
		return fmt.Errorf("probe scrape: %w", err)
	}
	log.Info("scraping", "url", s.url, "accept", *sf.accept, "gzip", *sf.gzip, "bytes", wire, "count", *sf.count)
	ts, total, elapsed := runScrapes(runCtx, s, *clients, *sf.count, 0)
	r := result{Kind: "scrape", Clients: *clients, Accept: *sf.accept, Gzip: *sf.gzip, ContentType: ct, Bytes: wire, BodyBytes: decoded}
	if lastErr := sum(&r, ts, elapsed); lastErr != nil {
		log.Warn("scrape had errors", "errors", r.Errors, "last", lastErr)
	}
	r.MBPerSec = float64(total) / 1e6 / max(elapsed.Seconds(), 1e-9)
	return c.emit(w, r)
}

// cmdMixed pushes and scrapes at once and reports both sides.
func cmdMixed(ctx context.Context, args []string, w io.Writer, log *slog.Logger) error {
	fs := flag.NewFlagSet("mixed", flag.ContinueOnError)
	var c common
	c.register(fs)
	pf := registerPush(fs)
	sf := registerScrape(fs, 10_000)
	pushClients := fs.Int("push-clients", 8, "concurrent pushing clients")
	scrapeClients := fs.Int("scrape-clients", 1, "concurrent scrapers")
	interval := fs.Duration("scrape-interval", 0, "each scraper starts a scrape at most this often, as Prometheus does (0: back to back)")
	duration := fs.Duration("duration", 10*time.Second, "run for this long")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := cmpErr(pf.check(), checkRange("count", int64(*sf.count), 1, maxScrapes),
		checkRange("push-clients", int64(*pushClients), 1, maxClients), checkRange("scrape-clients", int64(*scrapeClients), 1, maxClients),
		checkDuration("duration", *duration), checkInterval(*interval)); err != nil {
		return err
	}
	base, client, err := c.target(ctx, *pushClients+*scrapeClients)
	if err != nil {
		return err
	}
	bs, err := newBodies(*pf.format, bodyPool)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	s := scraper{client: client, url: base.String() + "/metrics", accept: resolveAccept(*sf.accept), gzip: *sf.gzip}
	runCtx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	ct, wire, decoded, err := s.probe(runCtx, "")
	if err != nil {
		return fmt.Errorf("probe scrape: %w", err)
	}
	log.Info("mixed", "url", c.url, "groups", *pf.groups, "push-clients", *pushClients, "scrape-clients", *scrapeClients, "duration", *duration)
	type scrapeOut struct {
		ts      []*tally
		total   int64
		elapsed time.Duration
	}
	done := make(chan scrapeOut, 1)
	go func() {
		ts, total, elapsed := runScrapes(runCtx, s, *scrapeClients, *sf.count, *interval)
		done <- scrapeOut{ts, total, elapsed}
	}()
	pts, pElapsed := runPushes(runCtx, pusher{client: client, base: base, spread: c.bases, method: *pf.method, bodies: bs}, *pf.groups, *pushClients, *pf.maxRequests)
	so := <-done
	pr := result{Kind: "mixed-push", Groups: *pf.groups, Clients: *pushClients, Method: bs.method(*pf.method), Format: *pf.format}
	if lastErr := sum(&pr, pts, pElapsed); lastErr != nil {
		log.Warn("pushes had errors", "errors", pr.Errors, "last", lastErr)
	}
	sr := result{Kind: "mixed-scrape", Groups: *pf.groups, Clients: *scrapeClients, Accept: *sf.accept, Gzip: *sf.gzip, ContentType: ct, Bytes: wire, BodyBytes: decoded,
		IntervalMs: float64(*interval) / float64(time.Millisecond)}
	if lastErr := sum(&sr, so.ts, so.elapsed); lastErr != nil {
		log.Warn("scrapes had errors", "errors", sr.Errors, "last", lastErr)
	}
	sr.MBPerSec = float64(so.total) / 1e6 / max(so.elapsed.Seconds(), 1e-9)
	return errors.Join(c.emit(w, pr), c.emit(w, sr))
}

// cmdRSS prints the memory of a process.
func cmdRSS(_ context.Context, args []string, w io.Writer, _ *slog.Logger) error {
	fs := flag.NewFlagSet("rss", flag.ContinueOnError)
	var c common
	c.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if c.pid <= 0 {
		return fmt.Errorf("-pid is required: %w", errUsage)
	}
	c.url = ""
	return c.emit(w, result{Kind: "rss"})
}

// cmdWait polls GET /-/ready until it answers 200; with -pid it gives up as
// soon as that process has exited. With -name it records how long the wait
// took (a gateway started just before: its load time) as a "ready" result.
func cmdWait(ctx context.Context, args []string, w io.Writer, log *slog.Logger) error {
	fs := flag.NewFlagSet("wait", flag.ContinueOnError)
	var c common
	c.register(fs)
	limit := fs.Duration("timeout", 30*time.Second, "give up after this long")
	poll := fs.Duration("poll", 100*time.Millisecond, "time between two requests")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkDuration("timeout", *limit); err != nil {
		return err
	}
	if *poll < time.Millisecond || *poll > 10*time.Second {
		return fmt.Errorf("-poll must be in [1ms, 10s], got %s: %w", *poll, errUsage)
	}
	start := time.Now()
	base, client, err := c.target(ctx, 1)
	if err != nil {
		return err
	}
	client.Timeout = 5 * time.Second
	ctx, cancel := context.WithTimeout(ctx, *limit)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base.String()+"/-/ready", nil)
		if err != nil {
			return fmt.Errorf("build request: %w", err)
		}
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				elapsed := time.Since(start)
				log.Info("ready", "url", c.url, "after", elapsed)
				if c.name == "" {
					return nil
				}
				return c.emit(w, result{Kind: "ready", Seconds: elapsed.Seconds()})
			}
		}
		if c.pid > 0 && processGone(c.pid) {
			return fmt.Errorf("process %d exited before %s/-/ready answered 200", c.pid, c.url)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s/-/ready did not answer 200 within %s", c.url, *limit)
		case <-time.After(*poll):
		}
	}
}

// cmdNote records a line of text among the results, e.g. why a step was
// skipped.
func cmdNote(_ context.Context, args []string, w io.Writer, _ *slog.Logger) error {
	fs := flag.NewFlagSet("note", flag.ContinueOnError)
	var c common
	c.register(fs)
	text := fs.String("text", "", "the note")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *text == "" {
		return fmt.Errorf("-text is required: %w", errUsage)
	}
	c.url = ""
	return c.emit(w, result{Kind: "note", Note: *text})
}
