package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// TestPersistenceAcrossRestart pushes, deletes, stops the gateway with
// SIGTERM and restarts it on the same --persistence.file: the data, including
// the push times, is back and the deleted group stays deleted.
func TestPersistenceAcrossRestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pushgate.journal")
	g := startGateway(t, "--persistence.file="+file)
	pushText(t, g, http.MethodPut, "/metrics/job/p1/instance/a", "# HELP persist_metric Persisted.\n# TYPE persist_metric gauge\npersist_metric 1.25\n")
	pushText(t, g, http.MethodPost, "/metrics/job/p2", "# TYPE persist_metric gauge\npersist_metric 2\n")
	pushText(t, g, http.MethodPut, "/metrics/job/p3/path@base64/L3Zhci90bXA", "# TYPE persist_metric gauge\npersist_metric 3\n")
	pushText(t, g, http.MethodPut, "/metrics/job/gone", "# TYPE persist_metric gauge\npersist_metric 4\n")
	mustStatus(t, http.StatusAccepted, http.MethodDelete, g.url("/metrics/job/gone"), nil)
	eventually(t, waitTimeout, func() error {
		if len(scrape(t, g).series("persist_metric", lbl("job", "gone"))) > 0 {
			return errorf("deleted group still present")
		}
		return nil
	})
	before := scrape(t, g)

	if code := g.signal(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	g = g.restart(t)
	after := scrape(t, g)
	if a, b := after.pushedDump(), before.pushedDump(); a != b {
		t.Fatalf("store differs after restart:\nbefore:\n%s\nafter:\n%s", b, a)
	}
	after.requireValue(t, "persist_metric", lbl("job", "p1", "instance", "a"), 1.25)
	after.requireValue(t, "persist_metric", lbl("job", "p3", "path", "/var/tmp", "instance", ""), 3)
	if h := after["persist_metric"].GetHelp(); h != "Persisted." {
		t.Fatalf("HELP after restart %q", h)
	}
	after.requireAbsent(t, "persist_metric", lbl("job", "gone"))

	// The restarted gateway keeps accepting and persisting.
	pushText(t, g, http.MethodPut, "/metrics/job/p4", "# TYPE persist_metric gauge\npersist_metric 5\n")
	g.signal(syscall.SIGTERM)
	g = g.restart(t)
	scrape(t, g).requireValue(t, "persist_metric", lbl("job", "p4", "instance", ""), 5)
}

// crashState is a group's state in the crash test: absent, or a value.
type crashState struct {
	present bool
	value   float64
}

// String renders s for messages.
func (s crashState) String() string {
	if !s.present {
		return "absent"
	}
	return fmt.Sprint(s.value)
}

// crashGroup is a group written by exactly one client of the crash test.
type crashGroup struct {
	path     string
	labels   map[string]string
	acked    crashState  // state after the last acknowledged write
	inflight *crashState // a write sent but not answered when the gateway died
}

// TestPersistenceSurvivesKill checks durability: concurrent clients push and
// delete, recording every 2xx; the gateway is killed with SIGKILL at a
// random moment and restarted on the same file. Every acknowledged write
// must be there (or the write that was in flight at the kill). Three rounds
// with different kill moments run on the same file.
func TestPersistenceSurvivesKill(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pushgate.journal")
	g := startGateway(t, "--persistence.file="+file)

	const clients, perClient = 8, 3
	var groups [clients][perClient]*crashGroup
	for c := range clients {
		for i := range perClient {
			job := fmt.Sprintf("crash%d", c)
			inst := fmt.Sprintf("i%d", i)
			groups[c][i] = &crashGroup{
				path:   fmt.Sprintf("/metrics/job/%s/instance/%s", job, inst),
				labels: lbl("job", job, "instance", inst),
			}
		}
	}
	var seq atomic.Int64

	for round := 1; round <= 3; round++ {
		// Kill after a random number of acknowledged writes, which spreads
		// the kill moment without depending on the machine's speed.
		killAfter := int64(20 + rand.IntN(300))
		var acks atomic.Int64
		killed := make(chan struct{})
		var killOnce sync.Once
		kill := func() {
			killOnce.Do(func() {
				_ = g.cmd.Process.Signal(syscall.SIGKILL)
				close(killed)
			})
		}

		var wg sync.WaitGroup
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; n < 5000; n++ {
					select {
					case <-killed:
						return
					default:
					}
					grp := groups[c][rand.IntN(perClient)]
					next := crashState{}
					method, body, want := http.MethodDelete, []byte(nil), http.StatusAccepted
					if rand.IntN(4) != 0 {
						next = crashState{present: true, value: float64(seq.Add(1))}
						method, want = http.MethodPut, http.StatusOK
						body = []byte(fmt.Sprintf("# TYPE crash_value gauge\ncrash_value %v\n", next.value))
					}
					grp.inflight = &next
					r, err := doRequest(context.Background(), method, g.url(grp.path), body)
					if err != nil {
						return // the gateway died: this write stays in flight
					}
					if r.Status != want {
						t.Errorf("%s %s: got %s, want %d", method, grp.path, r, want)
						kill()
						return
					}
					grp.acked, grp.inflight = next, nil
					if acks.Add(1) == killAfter {
						kill()
					}
				}
			}()
		}
		wg.Wait()
		kill() // in case the clients finished first
		g.wait(readyTimeout)
		t.Logf("round %d: killed after %d acknowledged writes", round, acks.Load())
		if t.Failed() {
			return
		}

		g = g.restart(t)
		mfs := scrape(t, g)
		for c := range clients {
			for _, grp := range groups[c] {
				m := mfs.find("crash_value", grp.labels)
				got := crashState{}
				if m != nil {
					got = crashState{present: true, value: sampleValue(m)}
				}
				switch {
				case got == grp.acked:
				case grp.inflight != nil && got == *grp.inflight:
					grp.acked = got
				default:
					inflight := "none"
					if grp.inflight != nil {
						inflight = grp.inflight.String()
					}
					t.Errorf("round %d: group %v after restart is %v, last acknowledged %v (in flight: %s)",
						round, grp.labels, got, grp.acked, inflight)
				}
				grp.acked, grp.inflight = got, nil
			}
		}
		if t.Failed() {
			return
		}
	}
}
