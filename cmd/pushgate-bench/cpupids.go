package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// cpuProcess is one process whose CPU time a push run accounts for, named
// by its role: "gateway:<name>" for a gateway process (a replica, or a
// single gateway with its journal), "etcd:<name>" for an etcd member. The
// report sums each category, so that a cluster's replicas are compared
// with one journal gateway, and etcd's members are shown apart.
type cpuProcess struct {
	role string
	pid  int
}

// Categories of cpuProcess roles the report sums.
const (
	gatewayCategory = "gateway"
	etcdCategory    = "etcd"
)

// parseCPUPids reads -cpu-pids: comma-separated role=PID pairs, each role
// "<category>:<name>" with category gateway or etcd, each role once.
func parseCPUPids(s string) ([]cpuProcess, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []cpuProcess
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		role, rawPid, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return nil, fmt.Errorf("-cpu-pids: %q is not role=PID: %w", item, errUsage)
		}
		category, name, ok := strings.Cut(role, ":")
		if !ok || name == "" || (category != gatewayCategory && category != etcdCategory) {
			return nil, fmt.Errorf("-cpu-pids: role %q is not gateway:<name> or etcd:<name>: %w", role, errUsage)
		}
		pid, err := strconv.Atoi(rawPid)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("-cpu-pids: %q is not a process ID: %w", rawPid, errUsage)
		}
		if seen[role] {
			return nil, fmt.Errorf("-cpu-pids: role %q given twice: %w", role, errUsage)
		}
		seen[role] = true
		out = append(out, cpuProcess{role: role, pid: pid})
	}
	return out, nil
}

// readCPUs returns the CPU time each process has used so far, in seconds.
func readCPUs(ps []cpuProcess) ([]float64, error) {
	out := make([]float64, len(ps))
	for i, p := range ps {
		t, err := readProcCPU(p.pid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.role, err)
		}
		out[i] = t
	}
	return out, nil
}

// cpuPerRequest returns each process's CPU time between before and after,
// per request, in microseconds, by role.
func cpuPerRequest(ps []cpuProcess, before, after []float64, requests int64) map[string]float64 {
	out := make(map[string]float64, len(ps))
	for i, p := range ps {
		out[p.role] = (after[i] - before[i]) * 1e6 / float64(requests)
	}
	return out
}

// categorySum returns the sum of the per-request CPU of every role of
// category in m, and whether there was any.
func categorySum(m map[string]float64, category string) (float64, bool) {
	sum, any := 0.0, false
	for role, v := range m {
		if c, _, _ := strings.Cut(role, ":"); c == category {
			sum += v
			any = true
		}
	}
	return sum, any
}

// processRoles returns every role found in rs' per-process CPU, sorted.
func processRoles(rs []result) []string {
	seen := map[string]bool{}
	var roles []string
	for _, r := range rs {
		for role := range r.ProcessCPUUs {
			if !seen[role] {
				seen[role] = true
				roles = append(roles, role)
			}
		}
	}
	sort.Strings(roles)
	return roles
}
