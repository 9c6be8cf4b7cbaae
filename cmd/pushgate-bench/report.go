package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// metric is one number a report row shows for a kind of result.
type metric struct {
	name  string
	value func(result) float64
	// context marks a number that is not the gateway's (the machine's
	// load): it has no ratio.
	context bool
	// optional marks a number only some results have (0: not measured):
	// shown as "-" where missing, and its row left out when no result
	// has it.
	optional bool
}

// reportMetrics lists, per result kind, the numbers a comparison shows;
// with load, push rows also show the machine's load average. roles are the
// processes whose CPU push results account for (-cpu-pids): push rows show
// each category's sum, then each role.
func reportMetrics(kind string, load bool, roles []string) []metric {
	perSec := metric{name: "per s", value: func(r result) float64 { return r.PerSec }}
	p50 := metric{name: "p50 ms", value: func(r result) float64 { return r.P50Ms }}
	p99 := metric{name: "p99 ms", value: func(r result) float64 { return r.P99Ms }}
	switch kind {
	case "fill":
		return []metric{{name: "groups/s", value: func(r result) float64 { return r.PerSec }}}
	case "push", "mixed-push":
		perSec.name = "pushes/s"
		cpu := metric{name: "server CPU µs/push", value: func(r result) float64 { return r.ServerCPUUs }, optional: true}
		ms := append([]metric{perSec, p50, p99, cpu}, processMetrics(roles)...)
		if load {
			ms = append(ms, metric{name: "load 1m", value: func(r result) float64 { return r.Load1 }, context: true})
		}
		return ms
	case "scrape", "mixed-scrape":
		return []metric{
			{name: "scrape p50 ms", value: func(r result) float64 { return r.P50Ms }},
			{name: "scrape max ms", value: func(r result) float64 { return r.MaxMs }},
			{name: "MB per scrape", value: func(r result) float64 { return float64(r.Bytes) / 1e6 }},
		}
	case "ready":
		return []metric{
			{name: "seconds to ready", value: func(r result) float64 { return r.Seconds }},
			{name: "RSS MiB at ready", value: func(r result) float64 { return float64(r.RSSKiB) / 1024 }},
		}
	case "rss":
		return []metric{
			{name: "RSS MiB", value: func(r result) float64 { return float64(r.RSSKiB) / 1024 }},
			{name: "peak RSS MiB", value: func(r result) float64 { return float64(r.HWMKiB) / 1024 }},
		}
	}
	return nil
}

// processMetrics are the per-process CPU rows of push results: the sum of
// the gateway processes (one journal gateway, or a cluster's replicas),
// the sum of etcd's members, then every role alone.
func processMetrics(roles []string) []metric {
	if len(roles) == 0 {
		return nil
	}
	sum := func(category string) metric {
		return metric{name: "CPU µs/push, " + category + " processes", optional: true, value: func(r result) float64 {
			v, _ := categorySum(r.ProcessCPUUs, category)
			return v
		}}
	}
	ms := []metric{sum(gatewayCategory), sum(etcdCategory)}
	for _, role := range roles {
		ms = append(ms, metric{name: "CPU µs/push, " + role, optional: true, value: func(r result) float64 { return r.ProcessCPUUs[role] }})
	}
	return ms
}

// cmdReport reads JSON-lines result files and prints one comparison table:
// a row per workload and metric, a column per gateway, and the ratios of
// pushgate's value to the null server's and to the reference's (or, with
// -base, of every gateway's value to the base's).
func cmdReport(_ context.Context, args []string, w io.Writer, _ *slog.Logger) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	in := fs.String("in", "", "JSON-lines results file")
	var opts reportOptions
	fs.StringVar(&opts.subject, "subject", "pushgate", "label of the gateway the ratios are about")
	fs.StringVar(&opts.base, "base", "", "if set, the ratios are every other gateway's value to this one's (e.g. journal), instead of the subject's to every other")
	fs.BoolVar(&opts.load, "load", false, "add a row with the machine's 1-minute load average to every push workload")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *in == "" {
		return fmt.Errorf("-in is required: %w", errUsage)
	}
	rs, err := readResults(*in)
	if err != nil {
		return err
	}
	return writeReport(w, rs, opts)
}

// reportOptions chooses what a report compares.
type reportOptions struct {
	// subject is the gateway whose value is divided by every other's.
	subject string
	// base, when set, is the gateway every other's value is divided by
	// (first column), instead.
	base string
	// load adds the load average to push rows.
	load bool
}

func readResults(path string) ([]result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open results: %w", err)
	}
	defer f.Close()
	var rs []result
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("results %s line %d: %w", path, line, err)
		}
		rs = append(rs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read results %s: %w", path, err)
	}
	return rs, nil
}

// writeReport prints the comparison table and then every note.
func writeReport(w io.Writer, rs []result, opts reportOptions) error {
	subject := opts.subject
	if opts.base != "" {
		subject = opts.base
	}
	type key struct{ workload, kind string }
	var keys []key
	var targets []string
	cells := map[key]map[string]result{}
	var notes []result
	for _, r := range rs {
		if r.Kind == "note" {
			notes = append(notes, r)
			continue
		}
		k := key{r.Workload, r.Kind}
		if cells[k] == nil {
			cells[k] = map[string]result{}
			keys = append(keys, k)
		}
		cells[k][r.Target] = r
		if !slices.Contains(targets, r.Target) {
			targets = append(targets, r.Target)
		}
	}
	roles := processRoles(rs)
	order := []string{subject, "null", "reference"}
	slices.SortStableFunc(targets, func(a, b string) int {
		ia, ib := slices.Index(order, a), slices.Index(order, b)
		if ia < 0 {
			ia = len(order)
		}
		if ib < 0 {
			ib = len(order)
		}
		return ia - ib
	})
	// Each ratio divides the value of num by that of den.
	type pair struct{ num, den string }
	var ratios []pair
	for _, t := range targets {
		switch {
		case t == subject || !slices.Contains(targets, subject):
		case opts.base != "":
			ratios = append(ratios, pair{t, subject})
		default:
			ratios = append(ratios, pair{subject, t})
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"workload", "metric"}
	head = append(head, targets...)
	for _, p := range ratios {
		head = append(head, p.num+"/"+p.den)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, k := range keys {
		for _, m := range reportMetrics(k.kind, opts.load, roles) {
			if m.optional && !slices.ContainsFunc(targets, func(t string) bool { r, ok := cells[k][t]; return ok && m.value(r) != 0 }) {
				continue
			}
			row := []string{k.workload, m.name}
			for _, t := range targets {
				r, ok := cells[k][t]
				row = append(row, cell(r, ok, m))
			}
			for _, p := range ratios {
				a, aok := cells[k][p.num]
				b, bok := cells[k][p.den]
				row = append(row, ratio(a, aok, b, bok, m))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("print report: %w", err)
	}
	for _, n := range notes {
		fmt.Fprintf(w, "note [%s %s]: %s\n", n.Target, n.Workload, n.Note)
	}
	return nil
}

func cell(r result, ok bool, m metric) string {
	if !ok || m.optional && m.value(r) == 0 {
		return "-"
	}
	s := formatNumber(m.value(r))
	if r.Finished != nil && !*r.Finished {
		s += fmt.Sprintf(" (DNF: %d groups in %.0f s)", r.Reached, r.Seconds)
	}
	if r.Errors > 0 {
		s += fmt.Sprintf(" (%d err)", r.Errors)
	}
	return s
}

func ratio(a result, aok bool, b result, bok bool, m metric) string {
	if !aok || !bok || m.context || m.value(b) == 0 || m.optional && m.value(a) == 0 {
		return "-"
	}
	v := m.value(a) / m.value(b)
	if v < 0.1 {
		return fmt.Sprintf("%.4f×", v)
	}
	return fmt.Sprintf("%.2f×", v)
}

func formatNumber(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
