package store

import (
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
)

func TestZZHeapProbe(t *testing.T) {
	if os.Getenv("HEAPPROBE") == "" {
		t.Skip()
	}
	runtime.MemProfileRate = 256
	s := filledStore(t, 10_000)
	runtime.GC()
	f, _ := os.Create(os.Getenv("HEAPPROBE"))
	pprof.Lookup("heap").WriteTo(f, 0)
	f.Close()
	runtime.KeepAlive(s)
}
