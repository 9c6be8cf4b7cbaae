package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// raceFamilies are the gauge families the concurrency test pushes.
var raceFamilies = []string{"race_a", "race_b", "race_c"}

// raceGroup is one grouping key of the concurrency test with the state its
// last acknowledged write left it in. mu serializes request and record, so
// "last acknowledged" is well defined.
type raceGroup struct {
	mu      sync.Mutex
	path    string
	labels  map[string]string
	present bool
	values  map[string]float64
}

// raceBody renders a text body of gauges.
func raceBody(values map[string]float64) string {
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "# TYPE %s gauge\n%s %v\n", n, n, values[n])
	}
	return b.String()
}

// TestConcurrentPushDeleteScrape runs many goroutines that PUT, POST and
// DELETE random groups of a small key space while others scrape, against a
// gateway built with -race. Every scrape must parse with expfmt and hold no
// duplicate series; at the end each group holds exactly its last
// acknowledged write, and the gateway reports no data race.
func TestConcurrentPushDeleteScrape(t *testing.T) {
	g := startGatewayBinary(t, raceBinary(t))

	var groups []*raceGroup
	for j := 0; j < 4; j++ {
		for _, inst := range []string{"a", "b", "c"} {
			job := fmt.Sprintf("race%d", j)
			groups = append(groups, &raceGroup{
				path:   fmt.Sprintf("/metrics/job/%s/instance/%s", job, inst),
				labels: lbl("job", job, "instance", inst),
			})
		}
	}

	const (
		writers  = 16
		scrapers = 3
		maxOps   = 3000
		maxTime  = 20 * time.Second
	)
	// ctx only tells the goroutines to stop starting requests.
	ctx, cancel := context.WithTimeout(context.Background(), maxTime)
	defer cancel()
	var (
		ops, scrapes, seq atomic.Int64
		wg                sync.WaitGroup
		errMu             sync.Mutex
		errs              []string
	)
	fail := func(format string, args ...any) {
		errMu.Lock()
		defer errMu.Unlock()
		if len(errs) < 10 {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
		cancel()
	}

	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && ops.Add(1) <= maxOps {
				grp := groups[rand.IntN(len(groups))]
				body := map[string]float64{}
				for _, f := range raceFamilies {
					if rand.IntN(2) == 0 {
						body[f] = float64(seq.Add(1))
					}
				}
				if len(body) == 0 {
					body[raceFamilies[rand.IntN(len(raceFamilies))]] = float64(seq.Add(1))
				}
				method := []string{http.MethodPut, http.MethodPost, http.MethodDelete}[rand.IntN(3)]
				want := http.StatusOK
				var payload []byte
				if method == http.MethodDelete {
					want = http.StatusAccepted
				} else {
					payload = []byte(raceBody(body))
				}

				grp.mu.Lock()
				// The request itself is never cancelled: an in-flight write
				// could be applied without the test seeing the answer.
				r, err := doRequest(context.Background(), method, g.url(grp.path), payload)
				if err == nil && r.Status == want {
					switch method {
					case http.MethodPut:
						grp.present, grp.values = true, body
					case http.MethodPost:
						if !grp.present {
							grp.present, grp.values = true, map[string]float64{}
						}
						for k, v := range body {
							grp.values[k] = v
						}
					case http.MethodDelete:
						grp.present, grp.values = false, nil
					}
				}
				grp.mu.Unlock()
				if err != nil {
					fail("%s %s: %v", method, grp.path, err)
				} else if r.Status != want {
					fail("%s %s: got %s, want %d", method, grp.path, r, want)
				}
			}
		}()
	}
	writersDone := make(chan struct{})
	var sg sync.WaitGroup
	for s := 0; s < scrapers; s++ {
		sg.Add(1)
		go func() {
			defer sg.Done()
			for {
				select {
				case <-writersDone:
					return
				default:
				}
				mfs, err := scrapeErr(context.Background(), g.url("/metrics"))
				if err != nil {
					fail("%v", err)
					return
				}
				scrapes.Add(1)
				for _, grp := range groups {
					if n := len(mfs.series("push_time_seconds", grp.labels)); n > 1 {
						fail("scrape holds %d push_time_seconds series for %v", n, grp.labels)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(writersDone)
	sg.Wait()
	timedOut := ctx.Err() != nil && len(errs) == 0
	cancel()
	if len(errs) > 0 {
		t.Fatalf("errors during the run:\n%s", strings.Join(errs, "\n"))
	}
	t.Logf("%d writes, %d scrapes (stopped by the time bound: %v)", min(ops.Load(), maxOps), scrapes.Load(), timedOut)
	if scrapes.Load() == 0 {
		t.Fatal("no scrape completed")
	}

	eventually(t, waitTimeout, func() error {
		mfs, err := scrapeErr(context.Background(), g.url("/metrics"))
		if err != nil {
			return err
		}
		for _, grp := range groups {
			if err := checkGroup(mfs, grp.labels, grp.present, grp.values); err != nil {
				return err
			}
		}
		return nil
	})

	if code := g.signal(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	requireNoDataRace(t, g.process)
}

// checkGroup compares a group's race_* families and its presence in a scrape
// with the expected state.
func checkGroup(mfs families, labels map[string]string, present bool, values map[string]float64) error {
	if !present {
		if s := mfs.series("push_time_seconds", labels); len(s) > 0 {
			return fmt.Errorf("group %v should be absent, has push_time_seconds", labels)
		}
	}
	for _, f := range raceFamilies {
		m := mfs.find(f, labels)
		want, ok := values[f]
		switch {
		case !ok && m != nil:
			return fmt.Errorf("group %v: %s = %v, want absent", labels, f, sampleValue(m))
		case ok && m == nil:
			return fmt.Errorf("group %v: %s absent, want %v", labels, f, want)
		case ok && sampleValue(m) != want:
			return fmt.Errorf("group %v: %s = %v, want %v", labels, f, sampleValue(m), want)
		}
	}
	return nil
}
