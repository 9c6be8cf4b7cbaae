package filejournal

import (
	"context"
	"errors"
	"fmt"
	"github.com/pushgate/pushgate/journal"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCompactionKeepsExactlyTheLiveState(t *testing.T) {
	tests := []struct {
		name   string
		groups [][]journal.Op
	}{
		{
			name: "overwritten and deleted keys are dropped",
			groups: func() [][]journal.Op {
				var g [][]journal.Op
				for i := range 500 {
					g = append(g, []journal.Op{set(fmt.Sprint("k", i%20), strings.Repeat("v", i))})
				}
				return append(g, []journal.Op{del("k3")}, []journal.Op{del("k7")})
			}(),
		},
		{
			name: "a group whose keys were partly replaced keeps only the live ones",
			groups: [][]journal.Op{
				{set("a", "1"), set("b", "1"), set("c", "1")},
				{set("b", "2")},
				{del("c")},
			},
		},
		{
			name:   "keys set before a wipe are gone",
			groups: [][]journal.Op{{set("a", "1")}, {set("b", "2")}, {wipe()}, {set("c", "3")}},
		},
		{
			name:   "an empty journal stays empty",
			groups: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.pgj")
			j, _ := openJournal(t, path, nil, Options{})
			for _, g := range tt.groups {
				appendWait(t, j, g...)
			}
			before := j.Stats()
			if err := j.Compact(context.Background()); err != nil {
				t.Fatalf("compact: %v", err)
			}
			after := j.Stats()
			if after.FileBytes != after.LiveBytes {
				t.Errorf("after compaction FileBytes = %d, want LiveBytes %d", after.FileBytes, after.LiveBytes)
			}
			if after.FileBytes > before.FileBytes && len(tt.groups) > 0 {
				t.Errorf("file grew from %d to %d bytes", before.FileBytes, after.FileBytes)
			}
			if after.Compactions != 1 || after.LastCompaction.IsZero() {
				t.Errorf("Stats() = %+v, want one compaction recorded", after)
			}
			if after.Records != uint64(after.LiveKeys) {
				t.Errorf("Records = %d, want one per live key (%d)", after.Records, after.LiveKeys)
			}
			// The journal keeps working on the new file, and compacts again.
			appendWait(t, j, set("after", "x"))
			if err := j.Compact(context.Background()); err != nil {
				t.Fatalf("second compact: %v", err)
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			st, _ := os.Stat(path)
			if st.Mode().Perm() != 0o600 {
				t.Errorf("compacted file mode = %v, want 0600", st.Mode().Perm())
			}

			want := model(tt.groups)
			want["after"] = "x"
			_, got := openJournal(t, path, nil, Options{})
			if !maps.Equal(got.values, want) {
				t.Errorf("after reopen loaded %v, want %v", got.values, want)
			}
			if leftovers, _ := filepath.Glob(path + ".compact-*"); len(leftovers) != 0 {
				t.Errorf("temporary files left: %v", leftovers)
			}
		})
	}
}

// model applies groups to a map, the way replay should.
func model(groups [][]journal.Op) map[string]string {
	m := map[string]string{}
	for _, g := range groups {
		for _, op := range g {
			switch op.Kind {
			case journal.OpSet:
				m[op.Key] = string(op.Value)
			case journal.OpDelete:
				delete(m, op.Key)
			case journal.OpDeleteAll:
				clear(m)
			}
		}
	}
	return m
}

func TestCompactionRunsWhileAppendsGoOn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.pgj")
	j, _ := openJournal(t, path, nil, Options{})
	const writers, each = 4, 400
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		groups [][]journal.Op // in Append order, which is file order
	)
	value := strings.Repeat("z", 2000)
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			var last *Ticket
			for i := range each {
				k := fmt.Sprintf("w%d-k%d", w, rng.IntN(30))
				var g []journal.Op
				switch r := rng.IntN(10); {
				case r == 0:
					g = []journal.Op{del(k)}
				case r == 1:
					g = []journal.Op{set(k, fmt.Sprint(i)), set(k+"-twin", value)}
				default:
					g = []journal.Op{set(k, fmt.Sprint(i, value))}
				}
				mu.Lock() // like the store: Append under the caller's lock
				tk, err := j.AppendTicket(g...)
				groups = append(groups, g)
				mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				if i%8 == 0 { // some writers wait, some run ahead
					if err := tk.Wait(context.Background()); err != nil {
						t.Error(err)
						return
					}
				}
				last = tk
			}
			if err := last.Wait(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	compactions := 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
loop:
	for {
		select {
		case <-done:
			break loop
		default:
		}
		if err := j.Compact(context.Background()); err != nil {
			t.Fatalf("compact: %v", err)
		}
		compactions++
	}
	if err := j.Compact(context.Background()); err != nil {
		t.Fatalf("final compact: %v", err)
	}
	want := model(groups)
	if st := j.Stats(); st.LiveKeys != len(want) || st.FileBytes != st.LiveBytes {
		t.Errorf("Stats() = %+v, want %d live keys in a file of LiveBytes", st, len(want))
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	_, got := openJournal(t, path, nil, Options{})
	if !maps.Equal(got.values, want) {
		t.Errorf("after reopen: %d keys, want %d; differing: %v", len(got.values), len(want), diffKeys(got.values, want))
	}
	t.Logf("%d compactions during %d appends", compactions+1, writers*each)
}

func diffKeys(got, want map[string]string) []string {
	var d []string
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			d = append(d, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			d = append(d, k)
		}
	}
	return d
}

func TestAutomaticCompactionShrinksAGrowingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.pgj")
	j, _ := openJournal(t, path, nil, Options{CompactInterval: time.Millisecond})
	value := strings.Repeat("v", 64<<10)
	for range 40 { // 2.5 MiB written for one 64 KiB key
		appendWait(t, j, set("only", value))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := j.Stats()
		if st.Compactions > 0 && st.FileBytes <= 2*st.LiveBytes+compactSlack {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("file not compacted automatically: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestNoAutomaticCompactionWhileTheFileIsSmall(t *testing.T) {
	j, _ := openJournal(t, filepath.Join(t.TempDir(), "state.pgj"), nil, Options{CompactInterval: time.Millisecond})
	for i := range 100 {
		appendWait(t, j, set("k", fmt.Sprint(i)))
	}
	// The loop compacts only what needsCompactionLocked asks for: check
	// the rule itself rather than sleeping and hoping the loop ran.
	j.mu.Lock()
	need := j.needsCompactionLocked()
	j.mu.Unlock()
	if need {
		t.Errorf("a file of %d bytes with %d live bytes asks for compaction", j.Stats().FileBytes, j.Stats().LiveBytes)
	}
	// Close stops the loop after anything it started: none may have run.
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if n := j.Stats().Compactions; n != 0 {
		t.Errorf("Compactions = %d for a file under 1 MiB, want 0", n)
	}
}

// noTempFS cannot create compaction files, like a full or read-only
// directory.
type noTempFS struct{ osFS }

func (noTempFS) CreateTemp(string, string) (file, error) { return nil, errInjected }

func TestAFailedCompactionLeavesTheJournalWorking(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.pgj")
	j, _ := openJournal(t, path, noTempFS{}, Options{})
	appendWait(t, j, set("a", "1"))
	if err := j.Compact(context.Background()); !errors.Is(err, errInjected) {
		t.Fatalf("Compact = %v, want the injected error", err)
	}
	if err := j.Err(); err != nil {
		t.Fatalf("Err() = %v after a failed compaction, want nil", err)
	}
	appendWait(t, j, set("b", "2"))
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	_, got := openJournal(t, path, nil, Options{})
	if !maps.Equal(got.values, map[string]string{"a": "1", "b": "2"}) {
		t.Errorf("loaded %v, want a=1 b=2", got.values)
	}
}
