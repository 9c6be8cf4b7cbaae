package filejournal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/pushgate/pushgate/journal"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned (wrapped) by Append and Compact after Close.
var ErrClosed = errors.New("journal closed")

// compactSlack is the file growth, beyond twice the live bytes, that
// triggers an automatic compaction.
const compactSlack = 1 << 20

// Options configures Open.
type Options struct {
	// Logger receives warnings (torn tail dropped) and errors (write
	// failures, failed compactions). Nil discards them.
	Logger *slog.Logger
	// CompactInterval is the minimum time between automatic compactions,
	// like the reference's --persistence.interval. Zero means 5m.
	CompactInterval time.Duration
}

// Journal is an append-only log of Ops in one file, with group commit: one
// writer goroutine writes and fsyncs everything appended while the previous
// write was in flight. It is safe for concurrent use.
type Journal struct {
	// lock is held on <path>.lock while the journal is open (nil in tests
	// that use a fake file system).
	lock     *os.File
	path     string
	dir      string
	fs       fileSystem
	log      *slog.Logger
	interval time.Duration

	ctx           context.Context // cancelled by Close; stops compaction
	cancel        context.CancelFunc
	writerDone    chan struct{}
	compactorDone chan struct{}
	compactKick   chan struct{}
	compactMu     sync.Mutex // one compaction at a time; held by Close to close the file

	// fileMu is held by the writer for each write+fsync and by compaction
	// while it copies the last bit of the tail and switches files.
	fileMu   sync.Mutex
	f        file
	fileSize int64 // bytes of f that are written and synced
	base     int64 // stream position of offset 0 of f (see entry.pos)

	durableSeq atomic.Uint64

	mu        sync.Mutex
	wake      *sync.Cond // signals the writer; uses mu
	pending   []byte     // encoded records not yet handed to the writer
	spare     []byte     // the writer's previous buffer, for reuse
	batch     *batch     // the tickets of pending
	seq       uint64     // last Append sequence number
	end       int64      // stream position after the last appended record
	index     map[string]entry
	liveBytes int64 // sum of entry.live
	err       error // sticky failure
	closed    bool

	durableEnd     int64  // stream position after the last synced record
	durableRecords uint64 // records synced since Open (cumulative)
	fileRecords    uint64 // records in the current file
	fileBytes      int64  // copy of fileSize for Stats
	syncs          uint64
	compactions    uint64
	lastCompaction time.Time
	lastCompactDur time.Duration
}

// entry locates a key's latest live record. pos is a stream position: the
// byte count of everything ever appended, continued across compactions, so
// that offset in the current file = pos - Journal.base. A record group can
// hold several keys, so several entries can share a pos.
type entry struct {
	pos  int64
	live int64 // size of a single-op record holding just this key's value
}

// batch is the group of Appends that share one write and one fsync.
type batch struct {
	done    chan struct{}
	err     error
	lastSeq uint64 // 0 while the batch holds no Append
	records uint64
}

func newBatch() *batch { return &batch{done: make(chan struct{})} }

// Ticket waits for the durability of one Append.
type Ticket struct {
	seq  uint64
	b    *batch
	path string
}

// Position returns the Append's sequence number as a log position
// (journal.Commit); sequence numbers increase by one per Append, starting
// at 1 after Open.
func (t *Ticket) Position() journal.Position { return journal.Position(t.seq) }

// Wait blocks until the Append's ops are written and fsync'd, or the journal
// failed. Cancelling ctx only stops the wait; the ops stay queued.
func (t *Ticket) Wait(ctx context.Context) error {
	select {
	case <-t.b.done:
		return t.b.err
	default:
	}
	select {
	case <-t.b.done:
		return t.b.err
	case <-ctx.Done():
		return fmt.Errorf("journal %s: wait for append %d: %w", t.path, t.seq, ctx.Err())
	}
}

// Open opens or creates the journal file at path, replays it and calls
// load(key, value) for each live key (last Set wins, Delete and DeleteAll
// respected) in the file order of their last write, before returning. load
// may keep value.
//
// A torn tail (an incomplete last record, or a bad last record with nothing
// valid after it) is truncated away with a warning saying how many bytes
// were dropped at which offset. Any other damage returns a *CorruptionError
// and leaves the file unchanged. Leftover compaction files
// (<path>.compact-*) are removed.
func Open(ctx context.Context, path string, opts Options, load func(key string, value []byte) error) (*Journal, error) {
	lock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, err
	}
	j, err := open(ctx, path, opts, osFS{}, load)
	if err != nil {
		lock.Close()
		return nil, err
	}
	j.lock = lock
	return j, nil
}

func open(ctx context.Context, path string, opts Options, fsys fileSystem, load func(key string, value []byte) error) (*Journal, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	interval := opts.CompactInterval
	if interval <= 0 {
		interval = 5 * time.Minute
	}
	j := &Journal{
		path:          path,
		dir:           filepath.Dir(path),
		fs:            fsys,
		log:           log,
		interval:      interval,
		writerDone:    make(chan struct{}),
		compactorDone: make(chan struct{}),
		compactKick:   make(chan struct{}, 1),
		batch:         newBatch(),
	}
	j.wake = sync.NewCond(&j.mu)
	if err := j.removeLeftovers(); err != nil {
		return nil, err
	}
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal %s: open: %w", path, err)
	}
	r, err := j.recover(ctx, f)
	if err == nil {
		for _, k := range r.liveInOrder() {
			if err = load(k, r.live[k].value); err != nil {
				err = fmt.Errorf("journal %s: load key %q: %w", path, k, err)
				break
			}
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}

	j.f = f
	j.fileSize = r.end
	j.fileBytes = r.end
	j.end = r.end
	j.durableEnd = r.end
	j.fileRecords = r.records
	j.index = make(map[string]entry, len(r.live))
	for k, v := range r.live {
		e := entry{pos: v.off, live: setRecordSize(len(k), len(v.value))}
		j.index[k] = e
		j.liveBytes += e.live
	}
	j.ctx, j.cancel = context.WithCancel(context.Background())
	go j.writeLoop()
	go j.compactLoop()
	j.kickCompactor()
	return j, nil
}

// removeLeftovers deletes <path>.compact-* files left by a crash during
// compaction.
func (j *Journal) removeLeftovers() error {
	entries, err := j.fs.ReadDir(j.dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("journal %s: directory %s does not exist: %w", j.path, j.dir, err)
		}
		return fmt.Errorf("journal %s: list directory: %w", j.path, err)
	}
	prefix := filepath.Base(j.path) + ".compact-"
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) || e.IsDir() {
			continue
		}
		name := filepath.Join(j.dir, e.Name())
		if err := j.fs.Remove(name); err != nil {
			return fmt.Errorf("journal %s: remove leftover compaction file %s: %w", j.path, name, err)
		}
		j.log.Info("removed leftover journal compaction file", "path", name)
	}
	return nil
}

// recover checks the header (writing one into a new file), replays the
// records and truncates a torn tail.
func (j *Journal) recover(ctx context.Context, f file) (*replayed, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("journal %s: stat: %w", j.path, err)
	}
	size := st.Size()
	if size < fileHeaderSize {
		head := make([]byte, size)
		if _, err := f.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("journal %s: read header: %w", j.path, err)
		}
		// A new file, or one whose creation a crash cut short.
		if !bytes.HasPrefix(fileHeader(), head) && len(bytes.Trim(head, "\x00")) != 0 {
			return nil, &CorruptionError{Path: j.path, Offset: 0, Reason: fmt.Sprintf("file of %d bytes is too short for a header and is not a pushgate journal", size)}
		}
		if size > 0 {
			j.log.Warn("journal header incomplete, starting an empty journal", "path", j.path, "bytes", size)
		}
		if err := j.writeHeader(f); err != nil {
			return nil, err
		}
		size = fileHeaderSize
	} else {
		head := make([]byte, fileHeaderSize)
		if _, err := f.ReadAt(head, 0); err != nil {
			return nil, fmt.Errorf("journal %s: read header: %w", j.path, err)
		}
		if reason := checkFileHeader(head); reason != "" {
			return nil, &CorruptionError{Path: j.path, Offset: 0, Reason: reason}
		}
	}
	r, err := replay(ctx, f, j.path, size)
	if err != nil {
		return nil, err
	}
	if r.torn != "" {
		if err := f.Truncate(r.end); err != nil {
			return nil, fmt.Errorf("journal %s: truncate torn tail at offset %d: %w", j.path, r.end, err)
		}
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("journal %s: sync after truncating torn tail: %w", j.path, err)
		}
		j.log.Warn("journal: dropped torn tail left by a crash",
			"path", j.path, "offset", r.end, "dropped_bytes", size-r.end, "reason", r.torn)
	}
	return r, nil
}

func (j *Journal) writeHeader(f file) error {
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("journal %s: truncate: %w", j.path, err)
	}
	if _, err := f.WriteAt(fileHeader(), 0); err != nil {
		return fmt.Errorf("journal %s: write header: %w", j.path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("journal %s: sync header: %w", j.path, err)
	}
	if err := j.fs.SyncDir(j.dir); err != nil {
		return fmt.Errorf("journal %s: sync directory: %w", j.path, err)
	}
	return nil
}

// Append enqueues ops as one atomic record group, in call order, without
// waiting for I/O: it only encodes the ops into memory, so callers may hold
// their own lock while calling it. The returned Ticket's Wait reports when
// the group is durable. Append with no ops returns a Ticket that completes
// once everything appended before it is durable. Append fails at once if the
// journal has failed or is closed.
func (j *Journal) Append(ops ...journal.Op) (journal.Commit, error) {
	t, err := j.AppendTicket(ops...)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// AppendTicket is Append returning the concrete *Ticket, whose Seq the
// journal's own tests and tools read.
func (j *Journal) AppendTicket(ops ...journal.Op) (*Ticket, error) {
	size, err := validateOps(ops)
	if err != nil {
		return nil, fmt.Errorf("journal %s: append: %w", j.path, err)
	}
	j.mu.Lock()
	if j.err != nil {
		err := j.err
		j.mu.Unlock()
		return nil, err
	}
	if j.closed {
		j.mu.Unlock()
		return nil, fmt.Errorf("journal %s: append: %w", j.path, ErrClosed)
	}
	if len(ops) > 0 {
		pos := j.end
		before := len(j.pending)
		j.pending = appendRecord(j.pending, ops, size)
		j.end += int64(len(j.pending) - before)
		j.batch.records++
		for _, op := range ops {
			j.applyToIndex(op, pos)
		}
	}
	j.seq++
	j.batch.lastSeq = j.seq
	t := &Ticket{seq: j.seq, b: j.batch, path: j.path}
	j.mu.Unlock()
	j.wake.Signal()
	return t, nil
}

// applyToIndex records op, written in the record at stream position pos.
// j.mu must be held.
func (j *Journal) applyToIndex(op journal.Op, pos int64) {
	switch op.Kind {
	case journal.OpSet:
		if old, ok := j.index[op.Key]; ok {
			j.liveBytes -= old.live
		}
		e := entry{pos: pos, live: setRecordSize(len(op.Key), len(op.Value))}
		j.index[op.Key] = e
		j.liveBytes += e.live
	case journal.OpDelete:
		if old, ok := j.index[op.Key]; ok {
			j.liveBytes -= old.live
			delete(j.index, op.Key)
		}
	case journal.OpDeleteAll:
		clear(j.index)
		j.liveBytes = 0
	}
}

// writeLoop is the single writer: it takes everything appended so far,
// writes it with one WriteAt, fsyncs once, and completes the tickets.
func (j *Journal) writeLoop() {
	defer close(j.writerDone)
	for {
		j.mu.Lock()
		for j.batch.lastSeq == 0 && !j.closed && j.err == nil {
			j.wake.Wait()
		}
		if j.batch.lastSeq == 0 || j.err != nil {
			j.mu.Unlock()
			return
		}
		b, buf := j.batch, j.pending
		j.batch, j.pending, j.spare = newBatch(), j.spare[:0], nil
		j.mu.Unlock()

		if err := j.writeBatch(b, buf); err != nil {
			return
		}
		if cap(buf) <= 4<<20 { // keep a normal-sized buffer for the next round
			j.mu.Lock()
			j.spare = buf[:0]
			j.mu.Unlock()
		}
	}
}

// writeBatch writes and syncs buf, the records of b, at the end of the file.
func (j *Journal) writeBatch(b *batch, buf []byte) error {
	j.fileMu.Lock()
	if len(buf) > 0 {
		if _, err := j.f.WriteAt(buf, j.fileSize); err != nil {
			return j.failLocked(b, "write", err)
		}
		if err := j.f.Sync(); err != nil {
			return j.failLocked(b, "fsync", err)
		}
		j.fileSize += int64(len(buf))
	}
	j.mu.Lock()
	j.durableEnd += int64(len(buf))
	j.durableRecords += b.records
	j.fileRecords += b.records
	j.fileBytes = j.fileSize
	if len(buf) > 0 {
		j.syncs++
	}
	compact := j.needsCompactionLocked()
	j.mu.Unlock()
	j.fileMu.Unlock()

	j.durableSeq.Store(b.lastSeq)
	close(b.done)
	if compact {
		j.kickCompactor()
	}
	return nil
}

// failLocked makes the journal failed after a write or fsync error: it
// truncates the file back to its last durable size, fails b and every
// pending ticket, and unlocks fileMu. It returns the sticky error.
func (j *Journal) failLocked(b *batch, op string, cause error) error {
	err := fmt.Errorf("journal %s: %s at offset %d failed, journal is read-only until restart: %w", j.path, op, j.fileSize, cause)
	truncErr := j.f.Truncate(j.fileSize)
	j.fileMu.Unlock()

	j.mu.Lock()
	j.err = err
	pb := j.batch
	j.batch, j.pending = newBatch(), nil
	j.mu.Unlock()

	b.err, pb.err = err, err
	close(b.done)
	close(pb.done)
	j.log.Error("journal write failed; rejecting all further changes", "path", j.path, "op", op, "err", cause,
		"durable_offset", j.fileSize, "truncate_err", truncErr)
	return err
}

// Err returns the sticky failure that stopped the journal, or nil.
func (j *Journal) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// Stats describes the journal for the status page and metrics.
type Stats struct {
	// Path is the journal file.
	Path string
	// FileBytes is the size of the file, counting only synced records.
	FileBytes int64
	// LiveBytes is what the file would take right after a compaction.
	LiveBytes int64
	// LiveKeys is the number of keys set and not deleted.
	LiveKeys int
	// Records is the number of record groups in the file.
	Records uint64
	// LastCompaction is when the last compaction started (zero if none).
	LastCompaction time.Time
	// LastCompactionDuration is how long the last compaction took.
	LastCompactionDuration time.Duration
	// Compactions counts completed compactions since Open.
	Compactions uint64
	// SyncCount counts data fsyncs since Open; under concurrency it stays
	// well below the number of Appends (group commit).
	SyncCount uint64
}

// Stats returns current figures.
func (j *Journal) Stats() Stats {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.statsLocked()
}

func (j *Journal) statsLocked() Stats {
	return Stats{
		Path:                   j.path,
		FileBytes:              j.fileBytes,
		LiveBytes:              fileHeaderSize + j.liveBytes,
		LiveKeys:               len(j.index),
		Records:                j.fileRecords,
		LastCompaction:         j.lastCompaction,
		LastCompactionDuration: j.lastCompactDur,
		Compactions:            j.compactions,
		SyncCount:              j.syncs,
	}
}

// Close flushes pending appends (waiting for their fsync), stops background
// compaction and closes the file. It returns the sticky failure, if any.
// Calling Close again returns nil.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	j.mu.Unlock()
	j.wake.Broadcast()
	j.cancel()
	<-j.writerDone
	<-j.compactorDone

	j.compactMu.Lock() // waits for a Compact call from another goroutine
	defer j.compactMu.Unlock()
	j.fileMu.Lock()
	defer j.fileMu.Unlock()
	closeErr := j.f.Close()
	if j.lock != nil {
		j.lock.Close()
	}
	if err := j.Err(); err != nil {
		return err
	}
	if closeErr != nil {
		return fmt.Errorf("journal %s: close: %w", j.path, closeErr)
	}
	return nil
}
