package main

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestCPUPidsAreRolesOfTwoCategoriesEachGivenOnce(t *testing.T) {
	ps, err := parseCPUPids("gateway:leader=10, gateway:follower-1=11,etcd:0=20")
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 || ps[0] != (cpuProcess{"gateway:leader", 10}) || ps[2] != (cpuProcess{"etcd:0", 20}) {
		t.Fatalf("parsed %v", ps)
	}
	for _, bad := range []string{"leader=10", "gateway=10", "db:x=1", "gateway:a=0", "gateway:a=x", "gateway:a=1,gateway:a=2", "gateway:"} {
		if _, err := parseCPUPids(bad); !errors.Is(err, errUsage) {
			t.Errorf("parseCPUPids(%q) = %v, want a usage error", bad, err)
		}
	}
}

func TestCPUPerRequestIsEachProcesssTimeOverTheRequests(t *testing.T) {
	ps := []cpuProcess{{"gateway:leader", 1}, {"etcd:0", 2}}
	got := cpuPerRequest(ps, []float64{1.0, 2.0}, []float64{1.5, 2.1}, 1000)
	if got["gateway:leader"] != 500 || got["etcd:0"] < 99.99 || got["etcd:0"] > 100.01 {
		t.Fatalf("per request %v, want leader 500 µs and etcd 100 µs", got)
	}
}

func TestACPUPidsRunReadsThisProcess(t *testing.T) {
	ps := []cpuProcess{{"gateway:self", os.Getpid()}}
	before, err := readCPUs(ps)
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := 0; i < 50_000_000; i++ {
		x += i % 7
	}
	after, err := readCPUs(ps)
	if err != nil || after[0] < before[0] || x == 0 {
		t.Fatalf("CPU time went from %v to %v (%v)", before, after, err)
	}
}

func TestAReportSumsTheGatewayAndEtcdProcessesOfEveryRun(t *testing.T) {
	rs := []result{
		{Kind: "push", Target: "journal", Workload: "durable", PerSec: 4000,
			ProcessCPUUs: map[string]float64{"gateway:journal": 150}},
		{Kind: "push", Target: "cluster-leader", Workload: "durable", PerSec: 1000,
			ProcessCPUUs: map[string]float64{"gateway:leader": 200, "gateway:follower-1": 50, "gateway:follower-2": 50, "etcd:0": 100, "etcd:1": 40, "etcd:2": 40}},
	}
	var out bytes.Buffer
	if err := writeReport(&out, rs, reportOptions{subject: "pushgate", base: "journal"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"durable CPU µs/push, gateway processes 150 300 2.00×",
		"durable CPU µs/push, etcd processes - 180 -",
		"durable CPU µs/push, gateway:leader - 200 -",
		"durable CPU µs/push, etcd:0 - 100 -",
	} {
		found := false
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Join(strings.Fields(l), " ") == want {
				found = true
			}
		}
		if !found {
			t.Errorf("no row %q in\n%s", want, out.String())
		}
	}
}
