package filejournal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/pushgate/pushgate/journal"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// loaded is what Open handed to load, in order.
type loaded struct {
	keys   []string
	values map[string]string
}

// openJournal opens path with fsys and closes it at the end of the test.
func openJournal(t *testing.T, path string, fsys fileSystem, opts Options) (*Journal, loaded) {
	t.Helper()
	j, got, err := tryOpen(path, fsys, opts)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { j.Close() })
	return j, got
}

func tryOpen(path string, fsys fileSystem, opts Options) (*Journal, loaded, error) {
	got := loaded{values: map[string]string{}}
	if fsys == nil {
		fsys = osFS{}
	}
	j, err := open(context.Background(), path, opts, fsys, func(k string, v []byte) error {
		if _, dup := got.values[k]; dup {
			return fmt.Errorf("key %q loaded twice", k)
		}
		got.keys = append(got.keys, k)
		got.values[k] = string(v)
		return nil
	})
	return j, got, err
}

// appendWait appends one group and waits for it to be durable.
func appendWait(t *testing.T, j *Journal, ops ...journal.Op) {
	t.Helper()
	tk, err := j.Append(ops...)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	if err := tk.Wait(context.Background()); err != nil {
		t.Fatalf("wait: %v", err)
	}
}

func set(k, v string) journal.Op { return journal.Op{Kind: journal.OpSet, Key: k, Value: []byte(v)} }
func del(k string) journal.Op    { return journal.Op{Kind: journal.OpDelete, Key: k} }
func wipe() journal.Op           { return journal.Op{Kind: journal.OpDeleteAll} }

// logBuffer returns a logger writing text lines into a buffer.
func logBuffer() (*slog.Logger, *syncBuffer) {
	var b syncBuffer
	return slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})), &b
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestReplay(t *testing.T) {
	tests := []struct {
		name     string
		groups   [][]journal.Op
		wantKeys []string
		want     map[string]string
	}{
		{
			name:     "values set before close are loaded after reopen",
			groups:   [][]journal.Op{{set("a", "1")}, {set("b", "2")}},
			wantKeys: []string{"a", "b"},
			want:     map[string]string{"a": "1", "b": "2"},
		},
		{
			name:     "the last set of a key wins",
			groups:   [][]journal.Op{{set("a", "1")}, {set("a", "2")}},
			wantKeys: []string{"a"},
			want:     map[string]string{"a": "2"},
		},
		{
			name:     "a deleted key is not loaded",
			groups:   [][]journal.Op{{set("a", "1")}, {set("b", "2")}, {del("a")}},
			wantKeys: []string{"b"},
			want:     map[string]string{"b": "2"},
		},
		{
			name:     "delete all removes every earlier key but not later ones",
			groups:   [][]journal.Op{{set("a", "1"), set("b", "2")}, {wipe()}, {set("c", "3")}},
			wantKeys: []string{"c"},
			want:     map[string]string{"c": "3"},
		},
		{
			name:     "ops of one group apply in call order",
			groups:   [][]journal.Op{{set("a", "1"), del("a"), set("b", "2"), wipe(), set("c", "3"), set("d", "4")}},
			wantKeys: []string{"c", "d"},
			want:     map[string]string{"c": "3", "d": "4"},
		},
		{
			name:     "keys load in the order of their last write",
			groups:   [][]journal.Op{{set("a", "1")}, {set("b", "2")}, {set("a", "3")}},
			wantKeys: []string{"b", "a"},
			want:     map[string]string{"a": "3", "b": "2"},
		},
		{
			name:     "an empty value and an empty key survive",
			groups:   [][]journal.Op{{set("", "")}, {set("k", "")}},
			wantKeys: []string{"", "k"},
			want:     map[string]string{"": "", "k": ""},
		},
		{
			name:     "a journal with no records loads nothing",
			groups:   nil,
			wantKeys: nil,
			want:     map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.pgj")
			j, _ := openJournal(t, path, nil, Options{})
			for _, g := range tt.groups {
				appendWait(t, j, g...)
			}
			if err := j.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			j2, got := openJournal(t, path, nil, Options{})
			if !slices.Equal(got.keys, tt.wantKeys) {
				t.Errorf("load order = %q, want %q", got.keys, tt.wantKeys)
			}
			if fmt.Sprint(got.values) != fmt.Sprint(tt.want) {
				t.Errorf("loaded %v, want %v", got.values, tt.want)
			}
			if st := j2.Stats(); st.LiveKeys != len(tt.want) {
				t.Errorf("Stats().LiveKeys = %d, want %d", st.LiveKeys, len(tt.want))
			}
		})
	}
}

func TestNewFileIsPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.pgj")
	openJournal(t, path, nil, Options{})
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", st.Mode().Perm())
	}
}

func TestAppendAfterCloseFails(t *testing.T) {
	j, _ := openJournal(t, filepath.Join(t.TempDir(), "state.pgj"), nil, Options{})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append(set("a", "1")); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: err = %v, want ErrClosed", err)
	}
	if err := j.Compact(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Compact after Close: err = %v, want ErrClosed", err)
	}
}

func TestAppendWithNoOpsWaitsForEarlierAppends(t *testing.T) {
	j, _ := openJournal(t, filepath.Join(t.TempDir(), "state.pgj"), nil, Options{})
	a, err := j.AppendTicket(set("a", "1"))
	if err != nil {
		t.Fatal(err)
	}
	barrier, err := j.AppendTicket()
	if err != nil {
		t.Fatal(err)
	}
	if err := barrier.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if j.durableSeq.Load() < a.seq {
		t.Errorf("durable sequence number %d after the barrier, want >= %d", j.durableSeq.Load(), a.seq)
	}
	if barrier.seq != a.seq+1 {
		t.Errorf("barrier sequence number %d, want %d", barrier.seq, a.seq+1)
	}
}

func TestCloseFlushesPendingAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.pgj")
	j, _ := openJournal(t, path, nil, Options{})
	var tickets []*Ticket
	for i := range 100 {
		tk, err := j.AppendTicket(set(fmt.Sprint("k", i), "v"))
		if err != nil {
			t.Fatal(err)
		}
		tickets = append(tickets, tk)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tk := range tickets {
		if err := tk.Wait(context.Background()); err != nil {
			t.Fatalf("ticket %d: %v", tk.seq, err)
		}
	}
	_, got := openJournal(t, path, nil, Options{})
	if len(got.keys) != 100 {
		t.Errorf("loaded %d keys after Close, want 100", len(got.keys))
	}
}

// writeRecords creates a journal holding groups and returns the file
// offsets at which each group's record starts, plus the final size.
func writeRecords(t *testing.T, path string, groups [][]journal.Op) (starts []int64, size int64) {
	t.Helper()
	j, _ := openJournal(t, path, nil, Options{})
	for _, g := range groups {
		starts = append(starts, j.Stats().FileBytes)
		appendWait(t, j, g...)
	}
	size = j.Stats().FileBytes
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return starts, size
}

func TestTornLastRecordIsDroppedAtEveryOffset(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full.pgj")
	groups := [][]journal.Op{
		{set("a", "1")},
		{set("b", strings.Repeat("x", 300))},
		{set("a", "2"), set("c", "3"), del("b")}, // the last record, a multi-op group
	}
	starts, size := writeRecords(t, full, groups)
	data, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	lastStart := starts[len(starts)-1]
	want := map[string]string{"a": "1", "b": strings.Repeat("x", 300)}

	for cut := lastStart; cut < size; cut++ {
		path := filepath.Join(dir, fmt.Sprintf("cut-%d.pgj", cut))
		if err := os.WriteFile(path, data[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		log, logs := logBuffer()
		j, got, err := tryOpen(path, nil, Options{Logger: log})
		if err != nil {
			t.Fatalf("cut at %d: open: %v", cut, err)
		}
		if fmt.Sprint(got.values) != fmt.Sprint(want) {
			t.Errorf("cut at %d: loaded %v, want %v", cut, got.values, want)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(path)
		if st.Size() != lastStart {
			t.Errorf("cut at %d: file is %d bytes after open, want truncated to %d", cut, st.Size(), lastStart)
		}
		wantLog := fmt.Sprintf("offset=%d dropped_bytes=%d", lastStart, cut-lastStart)
		if cut > lastStart && !strings.Contains(logs.String(), wantLog) {
			t.Errorf("cut at %d: log %q does not contain %q", cut, logs.String(), wantLog)
		}
		if cut == lastStart && strings.Contains(logs.String(), "torn") {
			t.Errorf("cut at a record boundary logged a torn tail: %q", logs.String())
		}
	}
}

func TestTailDamageWithNothingValidAfterIsDropped(t *testing.T) {
	tests := []struct {
		name   string
		damage func(data []byte, lastStart int64) []byte
	}{
		{
			name: "zeros after the last record are dropped",
			damage: func(data []byte, _ int64) []byte {
				return append(data, make([]byte, 4096)...)
			},
		},
		{
			name: "a flipped byte in the last record's value drops that record",
			damage: func(data []byte, _ int64) []byte {
				data[len(data)-1] ^= 0x40
				return data
			},
		},
		{
			name: "a last record whose payload is zeros is dropped",
			damage: func(data []byte, lastStart int64) []byte {
				clear(data[lastStart+recordHeaderSize:])
				return data
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.pgj")
			starts, _ := writeRecords(t, path, [][]journal.Op{{set("a", "1")}, {set("b", "2")}})
			data, _ := os.ReadFile(path)
			if err := os.WriteFile(path, tt.damage(data, starts[1]), 0o600); err != nil {
				t.Fatal(err)
			}
			_, got := openJournal(t, path, nil, Options{})
			if got.values["a"] != "1" {
				t.Errorf("loaded %v, want a=1 kept", got.values)
			}
		})
	}
}

func TestDamageBeforeTheTailRefusesToOpen(t *testing.T) {
	groups := [][]journal.Op{{set("a", "1")}, {set("b", strings.Repeat("y", 100))}, {set("c", "3")}}
	tests := []struct {
		name       string
		flip       func(starts []int64) int64 // offset of the byte to flip
		wantOffset func(starts []int64) int64
		wantReason string
	}{
		{
			name:       "a flipped byte in a middle record's value is a checksum mismatch",
			flip:       func(s []int64) int64 { return s[1] + recordHeaderSize + 50 },
			wantOffset: func(s []int64) int64 { return s[1] },
			wantReason: "checksum mismatch",
		},
		{
			name:       "a flipped byte in a middle record's length fails the header check",
			flip:       func(s []int64) int64 { return s[1] + 1 },
			wantOffset: func(s []int64) int64 { return s[1] },
			wantReason: "record header checksum mismatch",
		},
		{
			name:       "a flipped byte in the first record is reported at its offset",
			flip:       func(s []int64) int64 { return s[0] + recordHeaderSize + 2 },
			wantOffset: func(s []int64) int64 { return s[0] },
			wantReason: "checksum mismatch",
		},
		{
			name:       "a flipped byte in the magic is a bad header",
			flip:       func([]int64) int64 { return 1 },
			wantOffset: func([]int64) int64 { return 0 },
			wantReason: "bad magic",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.pgj")
			starts, _ := writeRecords(t, path, groups)
			data, _ := os.ReadFile(path)
			data[tt.flip(starts)] ^= 0x01
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			j, _, err := tryOpen(path, nil, Options{})
			if err == nil {
				j.Close()
				t.Fatal("open succeeded, want a *CorruptionError")
			}
			var ce *CorruptionError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (%T), want a *CorruptionError", err, err)
			}
			if ce.Path != path || ce.Offset != tt.wantOffset(starts) || !strings.Contains(ce.Reason, tt.wantReason) {
				t.Errorf("got %+v, want path %s offset %d reason containing %q", ce, path, tt.wantOffset(starts), tt.wantReason)
			}
			msg := err.Error()
			if !strings.Contains(msg, path) || !strings.Contains(msg, fmt.Sprintf("offset %d", ce.Offset)) || !strings.Contains(msg, "move the file aside") {
				t.Errorf("message %q does not name the file, the offset and the way out", msg)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(after, data) {
				t.Error("the file was modified")
			}
		})
	}
}

func TestAFileThatIsNotAJournalRefusesToOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.pgj")
	content := []byte("this is some other file, not a journal at all\n")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := tryOpen(path, nil, Options{})
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Offset != 0 {
		t.Fatalf("err = %v, want a *CorruptionError at offset 0", err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(after, content) {
		t.Error("the file was modified")
	}
}

// slowSyncFS makes every data fsync take a while, like a real disk, so that
// appends pile up behind it.
type slowSyncFS struct {
	osFS
	delay time.Duration
}

func (s slowSyncFS) OpenFile(name string, flag int, perm os.FileMode) (file, error) {
	f, err := s.osFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return slowSyncFile{f, s.delay}, nil
}

type slowSyncFile struct {
	file
	delay time.Duration
}

func (f slowSyncFile) Sync() error {
	time.Sleep(f.delay)
	return f.file.Sync()
}

func TestConcurrentAppendsShareFsyncs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.pgj")
	j, _ := openJournal(t, path, slowSyncFS{delay: 2 * time.Millisecond}, Options{})
	const writers, each = 32, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				tk, err := j.Append(set(fmt.Sprintf("w%d-%d", w, i), "v"))
				if err != nil {
					t.Error(err)
					return
				}
				if err := tk.Wait(context.Background()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	st := j.Stats()
	if st.SyncCount > writers*each/4 {
		t.Errorf("SyncCount = %d for %d appends, want at most a quarter", st.SyncCount, writers*each)
	}
	if st.Records != writers*each {
		t.Errorf("Records = %d, want %d", st.Records, writers*each)
	}
	if j.durableSeq.Load() != writers*each {
		t.Errorf("durable sequence number %d, want %d", j.durableSeq.Load(), writers*each)
	}
	t.Logf("%d appends, %d fsyncs", writers*each, st.SyncCount)
}

// faultFS fails data writes or fsyncs of the journal file once armed.
type faultFS struct {
	osFS
	failWrite, failSync *atomic.Bool
}

var errInjected = errors.New("injected disk failure")

func (s faultFS) OpenFile(name string, flag int, perm os.FileMode) (file, error) {
	f, err := s.osFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return faultFile{f, s}, nil
}

type faultFile struct {
	file
	fs faultFS
}

func (f faultFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.failWrite.Load() {
		n, _ := f.file.WriteAt(p[:len(p)/2], off) // a short write reaches the disk
		return n, errInjected
	}
	return f.file.WriteAt(p, off)
}

func (f faultFile) Sync() error {
	if f.fs.failSync.Load() {
		return errInjected
	}
	return f.file.Sync()
}

func TestDiskFailureStopsTheJournal(t *testing.T) {
	for _, what := range []string{"write", "fsync"} {
		t.Run("a failed "+what+" fails the group, later appends, and leaves no trace after reopen", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.pgj")
			fsys := faultFS{failWrite: new(atomic.Bool), failSync: new(atomic.Bool)}
			log, logs := logBuffer()
			j, _ := openJournal(t, path, fsys, Options{Logger: log})
			appendWait(t, j, set("a", "1"))
			sizeBefore := j.Stats().FileBytes

			if what == "write" {
				fsys.failWrite.Store(true)
			} else {
				fsys.failSync.Store(true)
			}
			tk, err := j.Append(set("b", "2"), set("a", "changed"))
			if err != nil {
				t.Fatalf("append: %v", err)
			}
			if err := tk.Wait(context.Background()); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Wait = %v, want the injected error with the path", err)
			}
			if !errors.Is(j.Err(), errInjected) {
				t.Errorf("Err() = %v, want the injected error", j.Err())
			}
			if _, err := j.Append(set("c", "3")); !errors.Is(err, errInjected) {
				t.Errorf("later Append: err = %v, want the sticky failure", err)
			}
			if j.durableSeq.Load() != 1 {
				t.Errorf("durable sequence number %d, want 1", j.durableSeq.Load())
			}
			if err := j.Close(); !errors.Is(err, errInjected) {
				t.Errorf("Close = %v, want the sticky failure", err)
			}
			if !strings.Contains(logs.String(), "level=ERROR") {
				t.Errorf("no error logged: %q", logs.String())
			}
			if st, _ := os.Stat(path); st.Size() != sizeBefore {
				t.Errorf("file is %d bytes, want truncated back to %d", st.Size(), sizeBefore)
			}

			_, got := openJournal(t, path, nil, Options{})
			if fmt.Sprint(got.values) != fmt.Sprint(map[string]string{"a": "1"}) {
				t.Errorf("after reopen loaded %v, want only a=1", got.values)
			}
		})
	}
}

func TestLeftoverCompactionFilesAreRemoved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.pgj")
	leftover := path + ".compact-123456"
	other := filepath.Join(dir, "other.pgj.compact-1")
	for _, p := range []string{leftover, other} {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	openJournal(t, path, nil, Options{})
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists (err %v)", leftover, err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another journal's file was touched: %v", err)
	}
}

func TestASecondOpenOfTheSameJournalIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.pgj")
	j, err := Open(context.Background(), path, Options{}, func(string, []byte) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), path, Options{}, func(string, []byte) error { return nil }); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("second open: err = %v, want a lock error", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2, err := Open(context.Background(), path, Options{}, func(string, []byte) error { return nil })
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	j2.Close()
}
