package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestAReportWithABaseDividesEveryGatewaysValueByTheBases(t *testing.T) {
	rs := []result{
		{Kind: "push", Target: "journal", Workload: "durable-push-1000-c8", PerSec: 4000, P99Ms: 10, Load1: 3.5},
		{Kind: "push", Target: "cluster-leader", Workload: "durable-push-1000-c8", PerSec: 1000, P99Ms: 40, Load1: 3.7},
		{Kind: "push", Target: "cluster-follower", Workload: "durable-push-1000-c8", PerSec: 800, P99Ms: 50, Load1: 3.9},
	}
	var out bytes.Buffer
	if err := writeReport(&out, rs, reportOptions{subject: "pushgate", base: "journal", load: true}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	head := strings.Fields(lines[0])
	wantHead := []string{"workload", "metric", "journal", "cluster-leader", "cluster-follower", "cluster-leader/journal", "cluster-follower/journal"}
	if strings.Join(head, " ") != strings.Join(wantHead, " ") {
		t.Fatalf("header %q, want %q", head, wantHead)
	}
	for _, want := range []string{
		"durable-push-1000-c8 pushes/s 4000 1000 800 0.25× 0.20×",
		"durable-push-1000-c8 p99 ms 10.0 40.0 50.0 4.00× 5.00×",
		"durable-push-1000-c8 load 1m 3.50 3.70 3.90 - -",
	} {
		found := false
		for _, l := range lines {
			if strings.Join(strings.Fields(l), " ") == want {
				found = true
			}
		}
		if !found {
			t.Errorf("no row %q in\n%s", want, out.String())
		}
	}
}

func TestWaitRecordsHowLongTheGatewayTookToBeReady(t *testing.T) {
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/-/ready" || asked.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "OK\n")
	}))
	defer srv.Close()
	var out, errs bytes.Buffer
	code := run(context.Background(), []string{"wait", "-url", srv.URL, "-poll", "1ms", "-label", "journal", "-name", "load-10", "-json"}, &out, &errs)
	if code != 0 {
		t.Fatalf("wait exited %d: %s", code, errs.String())
	}
	var r result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("wait printed %q: %v", out.String(), err)
	}
	if r.Kind != "ready" || r.Target != "journal" || r.Workload != "load-10" || r.Seconds <= 0 {
		t.Errorf("wait recorded %+v, want a ready result of journal load-10 with its seconds", r)
	}
	if n := asked.Load(); n != 3 {
		t.Errorf("wait asked %d times, want 3 (two 503s, then 200)", n)
	}
}
