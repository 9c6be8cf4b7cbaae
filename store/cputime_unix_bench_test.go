//go:build unix

package store

import (
	"syscall"
	"testing"
	"time"
)

// reportCPUPerOp starts counting the process's CPU time (user and system,
// every thread, the garbage collector's included) and returns the function
// that reports it per op of the timed loop as cpu-ns/op. On a loaded
// machine wall time per op varies with what else runs (±60% on the shared
// 2-core machine BenchmarkApplyRepush was first run on); CPU time varies
// far less, and is the figure a replica's cost is stated in.
func reportCPUPerOp(b *testing.B) (stop func()) {
	start := processCPU()
	return func() {
		b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
	}
}

// processCPU returns the CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
