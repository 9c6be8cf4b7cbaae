package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// procMemory is a process's resident set size now and at its peak.
type procMemory struct {
	rssKiB int64
	hwmKiB int64
}

// readProcMemory reads VmRSS and VmHWM from /proc/PID/status.
func readProcMemory(pid int) (procMemory, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procMemory{}, fmt.Errorf("read memory of pid %d: %w", pid, err)
	}
	m, err := parseProcStatus(raw)
	if err != nil {
		return procMemory{}, fmt.Errorf("read memory of pid %d: %w", pid, err)
	}
	return m, nil
}

// parseProcStatus extracts VmRSS and VmHWM (in kB) from a status file.
func parseProcStatus(raw []byte) (procMemory, error) {
	var m procMemory
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		key, rest, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		var dst *int64
		switch string(key) {
		case "VmRSS":
			dst = &m.rssKiB
		case "VmHWM":
			dst = &m.hwmKiB
		default:
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			return m, fmt.Errorf("%s: no value", key)
		}
		v, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return m, fmt.Errorf("%s: %w", key, err)
		}
		*dst = v
		found++
	}
	if found != 2 {
		return m, fmt.Errorf("VmRSS or VmHWM missing (a kernel thread or a zombie?)")
	}
	return m, nil
}

// processGone reports whether pid no longer runs: it has no /proc entry, or
// it is a zombie waiting to be reaped.
func processGone(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return true
	}
	for line := range bytes.SplitSeq(raw, []byte("\n")) {
		if state, ok := bytes.CutPrefix(line, []byte("State:")); ok {
			state = bytes.TrimSpace(state)
			return len(state) > 0 && (state[0] == 'Z' || state[0] == 'X')
		}
	}
	return false
}

// readLoad1 returns the machine's 1-minute load average, from /proc/loadavg.
func readLoad1() (float64, error) {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, fmt.Errorf("read the load average: %w", err)
	}
	return parseLoadavg(raw)
}

// parseLoadavg returns the first field of a /proc/loadavg line.
func parseLoadavg(raw []byte) (float64, error) {
	f := bytes.Fields(raw)
	if len(f) == 0 {
		return 0, fmt.Errorf("empty load average")
	}
	v, err := strconv.ParseFloat(string(f[0]), 64)
	if err != nil {
		return 0, fmt.Errorf("load average: %w", err)
	}
	return v, nil
}

// clockTicks is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on
// every Linux architecture Go supports).
const clockTicks = 100

// readProcCPU returns the CPU time (user plus system) pid has used, from
// /proc/PID/stat, in seconds.
func readProcCPU(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read CPU time of pid %d: %w", pid, err)
	}
	s, err := parseProcStat(raw)
	if err != nil {
		return 0, fmt.Errorf("read CPU time of pid %d: %w", pid, err)
	}
	return s, nil
}

// parseProcStat returns utime+stime of a stat line, in seconds. The fields
// are counted after the command name's closing parenthesis, since the name
// may hold spaces and parentheses.
func parseProcStat(raw []byte) (float64, error) {
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in %q", raw)
	}
	f := bytes.Fields(raw[i+1:])
	// After the name: state (field 3) ... utime is field 14, stime 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		v, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("CPU time %q: %w", s, err)
		}
		ticks += v
	}
	return float64(ticks) / clockTicks, nil
}
