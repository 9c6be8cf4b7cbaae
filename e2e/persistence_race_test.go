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
	"time"
)

// raceWrite is one write of the racing crash test: its interval and the
// state it leaves the group in.
type raceWrite struct {
	start, end time.Time // end is zero while unanswered
	acked      bool
	state      crashState
}

// sharedGroup is a group that every client of the racing crash test writes.
type sharedGroup struct {
	path   string
	labels map[string]string
	mu     sync.Mutex
	writes []*raceWrite
}

// TestPersistenceSurvivesKillWithRacingWrites: clients race PUTs and
// DELETEs on the same few groups (a DELETE often finds the group already
// being deleted), the gateway is killed with SIGKILL and restarted on the
// same file. What a group holds after the restart must be the effect of a
// write no acknowledged write began after the answer of: no acknowledged
// change lost, none resurrected. Before, a DELETE racing a pending DELETE
// of the same group was answered 202 before anything was synced, and a
// kill right after brought the group back.
func TestPersistenceSurvivesKillWithRacingWrites(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pushgate.journal")
	g := startGateway(t, "--persistence.file="+file)

	const clients, groupCount = 8, 3
	groups := make([]*sharedGroup, groupCount)
	begin := time.Now()
	for i := range groups {
		groups[i] = &sharedGroup{
			path:   fmt.Sprintf("/metrics/job/race/instance/i%d", i),
			labels: lbl("job", "race", "instance", fmt.Sprintf("i%d", i)),
			// Absent at first, as if deleted before the test began.
			writes: []*raceWrite{{start: begin, end: begin, acked: true}},
		}
	}
	var seq atomic.Int64
	for round := 1; round <= 8; round++ {
		// Every group starts this round from the state the last restart
		// showed, as one acknowledged write that ended before any other.
		epoch := time.Now()
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
		for range clients {
			wg.Go(func() {
				for n := 0; n < 5000; n++ {
					select {
					case <-killed:
						return
					default:
					}
					grp := groups[rand.IntN(groupCount)]
					w := &raceWrite{}
					method, body, want := http.MethodDelete, []byte(nil), http.StatusAccepted
					if rand.IntN(2) == 0 {
						w.state = crashState{present: true, value: float64(seq.Add(1))}
						method, want = http.MethodPut, http.StatusOK
						body = []byte(fmt.Sprintf("# TYPE race_value gauge\nrace_value %v\n", w.state.value))
					}
					grp.mu.Lock()
					w.start = time.Now()
					grp.writes = append(grp.writes, w)
					grp.mu.Unlock()
					r, err := doRequest(context.Background(), method, g.url(grp.path), body)
					if err != nil {
						return // the gateway died: this write stays unanswered
					}
					grp.mu.Lock()
					w.end = time.Now()
					grp.mu.Unlock()
					if r.Status != want {
						t.Errorf("%s %s: got %s, want %d", method, grp.path, r, want)
						kill()
						return
					}
					grp.mu.Lock()
					w.acked = true
					grp.mu.Unlock()
					if acks.Add(1) == killAfter {
						kill()
					}
				}
			})
		}
		wg.Wait()
		kill()
		g.wait(readyTimeout)
		t.Logf("round %d: killed after %d acknowledged writes", round, acks.Load())
		if t.Failed() {
			return
		}
		g = g.restart(t)
		mfs := scrape(t, g)
		for _, grp := range groups {
			got := crashState{}
			if m := mfs.find("race_value", grp.labels); m != nil {
				got = crashState{present: true, value: sampleValue(m)}
			}
			if w := grp.explain(got); w == nil {
				t.Errorf("round %d: group %v after restart is %v, which no write left unsuperseded: %s",
					round, grp.labels, got, grp.history())
			}
			// The next round starts from what the restart showed.
			grp.writes = []*raceWrite{{start: epoch, end: epoch, acked: true, state: got}}
		}
		if t.Failed() {
			return
		}
	}
}

// explain returns a write whose effect the group may show as got after the
// crash: one that leaves got, and that no acknowledged write began after
// the answer of (an unanswered write may have landed, or not, at any time).
func (grp *sharedGroup) explain(got crashState) *raceWrite {
	for _, w := range grp.writes {
		if w.state != got {
			continue
		}
		superseded := false
		for _, o := range grp.writes {
			if o.acked && !w.end.IsZero() && o.start.After(w.end) {
				superseded = true
				break
			}
		}
		if !superseded {
			return w
		}
	}
	return nil
}

// history describes the group's last writes for a failure message.
func (grp *sharedGroup) history() string {
	out := ""
	from := max(0, len(grp.writes)-12)
	for _, w := range grp.writes[from:] {
		end := "unanswered"
		if !w.end.IsZero() {
			end = fmt.Sprintf("answered +%s acked=%v", w.end.Sub(w.start), w.acked)
		}
		out += fmt.Sprintf("\n  %v at %s, %s", w.state, w.start.Format("15:04:05.000000"), end)
	}
	return out
}
