package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// loadGroups is the number of groups of the restart test: enough that
// loading the journal takes seconds, so that requests land during the load.
const loadGroups = 20000

// TestRestartNeverServesAPartialStore builds a journal of 20,000 groups,
// restarts the gateway on it and, from the moment the process starts until
// well after it is ready, scrapes /metrics and /api/v1/metrics in a loop:
// every 2xx answer must hold all 20,000 groups (a store still loading answers
// 503, as does every route but /-/healthy and /-/ready).
func TestRestartNeverServesAPartialStore(t *testing.T) {
	if testing.Short() {
		t.Skip("pushes 20,000 groups")
	}
	file := filepath.Join(t.TempDir(), "pushgate.journal")
	g := startGateway(t, "--persistence.file="+file)
	pushGroups(t, g, loadGroups)
	if code := g.signal(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}

	p := startProcess(t, "gateway", g.cmd.Path, g.cmd.Args[1:]...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*readyTimeout)
	defer cancel()
	var refused, full, readyAt int
	for i := 0; i < 100000 && ctx.Err() == nil; i++ {
		if p.exited() {
			t.Fatalf("the restarted gateway exited:\n%s", p.logTail(16<<10))
		}
		for _, check := range []struct {
			path  string
			count func([]byte) (int, error)
		}{
			{"/metrics", countScrapedGroups},
			{"/api/v1/metrics", countAPIGroups},
		} {
			r, err := doRequest(ctx, http.MethodGet, g.url(check.path), nil)
			if err != nil {
				continue // not listening yet
			}
			switch {
			case r.Status == http.StatusServiceUnavailable:
				refused++
				continue
			case r.Status/100 != 2:
				t.Fatalf("GET %s during the load: %s", check.path, clip(r.Body))
			}
			n, err := check.count(r.Body)
			if err != nil {
				t.Fatalf("GET %s: %v", check.path, err)
			}
			if n != loadGroups {
				t.Fatalf("GET %s answered %d with %d of the %d groups: a partial store was served", check.path, r.Status, n, loadGroups)
			}
			full++
		}
		if readyAt == 0 {
			if r, err := doRequest(ctx, http.MethodGet, g.url("/-/ready"), nil); err == nil && r.Status == http.StatusOK {
				readyAt = i
			}
		}
		// A few rounds after readiness show the full store is served.
		if readyAt != 0 && i >= readyAt+3 {
			break
		}
	}
	if readyAt == 0 || full == 0 {
		t.Fatalf("the gateway never became ready and served the store (%d refusals, %d full answers)", refused, full)
	}
	t.Logf("%d answers 503 while loading, %d full answers", refused, full)
}

// pushGroups PUTs n groups {job="load",instance="<i>"} of a few series each,
// from several clients at once so that they share journal syncs.
func pushGroups(t *testing.T, g *gateway, n int) {
	t.Helper()
	const clients = 16
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	next := make(chan int)
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				body := fmt.Sprintf("# TYPE load_value gauge\nload_value{kind=\"a\"} %d\nload_value{kind=\"b\"} %d\n# TYPE load_done_total counter\nload_done_total %d\n", i, 2*i, i)
				r, err := doRequest(ctx, http.MethodPut, g.url(fmt.Sprintf("/metrics/job/load/instance/%d", i)), []byte(body))
				if err == nil && r.Status != http.StatusOK {
					err = fmt.Errorf("push %d: %s", i, r)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case err := <-errs:
			close(next)
			wg.Wait()
			t.Fatal(err)
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if ctx.Err() != nil {
		t.Fatalf("pushing %d groups: %v", n, ctx.Err())
	}
}

// countScrapedGroups counts the groups of a text scrape by their
// push_time_seconds series.
func countScrapedGroups(body []byte) (int, error) {
	mfs, err := parseText(body)
	if err != nil {
		return 0, err
	}
	return len(mfs["push_time_seconds"].GetMetric()), nil
}

// countAPIGroups counts the groups of an /api/v1/metrics answer.
func countAPIGroups(body []byte) (int, error) {
	var resp struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return 0, fmt.Errorf("decode /api/v1/metrics: %w", err)
	}
	return len(resp.Data), nil
}
