package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// result is one measured outcome; it is printed as a table row and as one
// JSON line. Fields that do not apply to a kind are left out of the JSON.
type result struct {
	Kind     string `json:"kind"`               // fill, push, scrape, mixed-push, mixed-scrape, rss, ready, note
	Target   string `json:"target,omitempty"`   // the -label of the gateway, e.g. pushgate, reference, null
	Workload string `json:"workload,omitempty"` // the -name of the workload, e.g. push-1000
	URL      string `json:"url,omitempty"`
	Time     string `json:"time"`

	Groups  int    `json:"groups,omitempty"`
	Clients int    `json:"clients,omitempty"`
	Method  string `json:"method,omitempty"`
	Format  string `json:"format,omitempty"`
	Accept  string `json:"accept,omitempty"`
	Gzip    bool   `json:"gzip,omitempty"`
	// FreshConns is set when every request opened its own connection.
	FreshConns bool `json:"fresh_conns,omitempty"`
	// IntervalMs is the mixed workload's scrape interval, 0 for back to back.
	IntervalMs float64 `json:"scrape_interval_ms,omitempty"`

	Requests int64            `json:"requests"`
	Errors   int64            `json:"errors"`
	Status   map[string]int64 `json:"status,omitempty"`
	Seconds  float64          `json:"seconds"`
	PerSec   float64          `json:"per_second"` // requests (or groups for fill) per second

	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
	MeanMs float64 `json:"mean_ms"`
	// LatencyDropped counts requests whose latency was not kept because the
	// recorder was full; percentiles then cover the first requests only.
	LatencyDropped int64 `json:"latency_dropped,omitempty"`

	// Scrapes: wire bytes of one response, its decoded size, the response
	// Content-Type, and wire throughput.
	Bytes       int64   `json:"bytes,omitempty"`
	BodyBytes   int64   `json:"body_bytes,omitempty"`
	ContentType string  `json:"content_type,omitempty"`
	MBPerSec    float64 `json:"mb_per_second,omitempty"`

	// Fill: whether all groups were pushed before the time limit, and the
	// number of bench groups reached (-start plus the successful PUTs);
	// Stored is the count the gateway exposes after -check.
	Finished *bool `json:"finished,omitempty"`
	Reached  int   `json:"reached,omitempty"`
	Stored   *int  `json:"stored,omitempty"`

	// ServerCPUUs is the CPU time -pid used during a push run, per
	// request, in microseconds (from /proc/PID/stat, 10 ms ticks).
	ServerCPUUs float64 `json:"server_cpu_us_per_request,omitempty"`
	// ProcessCPUUs is the CPU time each process of -cpu-pids used during a
	// push run, per request, in microseconds, by role (gateway:<name>,
	// etcd:<name>).
	ProcessCPUUs map[string]float64 `json:"process_cpu_us_per_request,omitempty"`

	// Memory of -pid after the run, from /proc/PID/status.
	RSSKiB int64 `json:"rss_kib,omitempty"`
	HWMKiB int64 `json:"hwm_kib,omitempty"`

	// Load1 is the machine's 1-minute load average when the result was
	// taken: the machine may be shared, and the figures depend on it.
	Load1 float64 `json:"load1,omitempty"`

	Note string `json:"note,omitempty"`
}

// fill sets the latency and status fields from a run's recorders.
func (r *result) fillLatency(s summary, status map[int]int64, elapsed time.Duration) {
	r.Seconds = elapsed.Seconds()
	if r.Seconds > 0 {
		r.PerSec = float64(r.Requests) / r.Seconds
	}
	r.P50Ms = ms(s.percentile(50))
	r.P90Ms = ms(s.percentile(90))
	r.P99Ms = ms(s.percentile(99))
	r.MaxMs = ms(s.max())
	r.MeanMs = ms(s.mean())
	r.LatencyDropped = s.dropped
	if len(status) > 0 {
		r.Status = make(map[string]int64, len(status))
		for code, n := range status {
			r.Status[fmt.Sprint(code)] = n
		}
	}
}

// reporter prints results as a readable table or as JSON lines on its
// writer, and appends JSON lines to a file when one is given.
type reporter struct {
	w      io.Writer
	asJSON bool
	file   string
}

// emit prints r and appends it to the JSON-lines file.
func (rp reporter) emit(r result) error {
	if r.Time == "" {
		r.Time = time.Now().UTC().Format(time.RFC3339)
	}
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	if rp.file != "" {
		f, err := os.OpenFile(rp.file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("open results file: %w", err)
		}
		_, werr := f.Write(append(line, '\n'))
		cerr := f.Close()
		if err := cmpErr(werr, cerr); err != nil {
			return fmt.Errorf("write results file %s: %w", rp.file, err)
		}
	}
	if rp.asJSON {
		_, err = fmt.Fprintf(rp.w, "%s\n", line)
	} else {
		err = writeTable(rp.w, r)
	}
	if err != nil {
		return fmt.Errorf("print result: %w", err)
	}
	return nil
}

func cmpErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// writeTable prints one result as aligned "key value" lines.
func writeTable(w io.Writer, r result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := r.Kind
	if r.Target != "" || r.Workload != "" {
		head = fmt.Sprintf("%s  %s %s", r.Kind, r.Target, r.Workload)
	}
	fmt.Fprintf(tw, "== %s\n", strings.TrimSpace(head))
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "  %s\t"+format+"\n", append([]any{k}, a...)...) }
	if r.URL != "" {
		row("url", "%s", r.URL)
	}
	switch r.Kind {
	case "rss":
		row("rss", "%.1f MiB (peak %.1f MiB)", float64(r.RSSKiB)/1024, float64(r.HWMKiB)/1024)
		return tw.Flush()
	case "note":
		row("note", "%s", r.Note)
		return tw.Flush()
	case "ready":
		row("ready", "after %.3f s", r.Seconds)
		if r.RSSKiB > 0 {
			row("rss", "%.1f MiB (peak %.1f MiB)", float64(r.RSSKiB)/1024, float64(r.HWMKiB)/1024)
		}
		return tw.Flush()
	}
	if r.Groups > 0 {
		row("groups", "%d", r.Groups)
	}
	if r.Clients > 0 {
		row("clients", "%d", r.Clients)
	}
	if r.Method != "" || r.Format != "" {
		conns := "keep-alive"
		if r.FreshConns {
			conns = "a new connection per request"
		}
		row("request", "%s %s, %s", r.Method, r.Format, conns)
	}
	if r.Accept != "" {
		row("accept", "%s (gzip %v)", r.Accept, r.Gzip)
		if r.IntervalMs > 0 {
			row("interval", "a scrape every %.0f ms", r.IntervalMs)
		}
	}
	unit := "requests/s"
	if r.Kind == "fill" {
		unit = "groups/s"
	}
	row("requests", "%d in %.2f s, %d errors", r.Requests, r.Seconds, r.Errors)
	row("rate", "%.1f %s", r.PerSec, unit)
	row("latency", "p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  max %.2f ms", r.P50Ms, r.P90Ms, r.P99Ms, r.MaxMs)
	if len(r.Status) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(r.Status)) {
			parts = append(parts, fmt.Sprintf("%s×%d", k, r.Status[k]))
		}
		row("status", "%s", strings.Join(parts, " "))
	}
	if r.Bytes > 0 {
		row("size", "%d wire bytes, %d decoded, %s", r.Bytes, r.BodyBytes, r.ContentType)
		row("throughput", "%.1f MB/s", r.MBPerSec)
	}
	if r.Finished != nil {
		if *r.Finished {
			row("finished", "yes")
		} else {
			row("finished", "NO: reached %d groups in %.1f s", r.Reached, r.Seconds)
		}
	}
	if r.Stored != nil {
		row("stored", "%d groups exposed", *r.Stored)
	}
	if r.RSSKiB > 0 {
		row("rss", "%.1f MiB (peak %.1f MiB)", float64(r.RSSKiB)/1024, float64(r.HWMKiB)/1024)
	}
	if r.Note != "" {
		row("note", "%s", r.Note)
	}
	return tw.Flush()
}
