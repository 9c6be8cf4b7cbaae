package filejournal

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"github.com/pushgate/pushgate/journal"
	"hash/crc32"
	"io"
	"path/filepath"
	"slices"
	"time"
)

const (
	// smallTail is the tail size compaction copies while holding the
	// writer; larger tails are copied while Appends go on.
	smallTail = 256 << 10
	// maxTailRounds bounds the catch-up loop when Appends outpace it.
	maxTailRounds = 8
	// fixupChunk is how many index entries compaction touches per lock hold.
	fixupChunk = 1024
)

// Compact rewrites the file to hold only live records, each as a single-op
// record group. Appends keep going to the old file meanwhile; the writer is
// held only while the last small tail is copied, synced and the file is
// renamed into place. Compact also runs in the background when the file is
// larger than twice the live bytes plus 1 MiB, at most once per
// Options.CompactInterval. A failed compaction leaves the journal working
// on the old file.
func (j *Journal) Compact(ctx context.Context) error {
	j.compactMu.Lock()
	defer j.compactMu.Unlock()
	j.mu.Lock()
	err, closed := j.err, j.closed
	j.mu.Unlock()
	if err != nil {
		return err
	}
	if closed {
		return fmt.Errorf("journal %s: compact: %w", j.path, ErrClosed)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(j.ctx, cancel)()

	start := time.Now()
	if err := j.compact(ctx); err != nil {
		return err
	}
	took := time.Since(start)
	j.mu.Lock()
	j.compactions++
	j.lastCompaction, j.lastCompactDur = start, took
	st := j.statsLocked()
	j.mu.Unlock()
	j.log.Info("journal compacted", "path", j.path, "took", took, "file_bytes", st.FileBytes, "live_keys", st.LiveKeys)
	return nil
}

// liveRef is a key to carry into the compacted file.
type liveRef struct {
	key    string
	pos    int64 // stream position of its record in the old file
	newOff int64 // offset of its single-op record in the new file
}

func (j *Journal) compact(ctx context.Context) (err error) {
	j.fileMu.Lock()
	old, oldBase := j.f, j.base
	j.fileMu.Unlock()
	j.mu.Lock()
	split, splitRecords := j.durableEnd, j.durableRecords
	j.mu.Unlock()

	refs := j.collectLive(split)
	slices.SortFunc(refs, func(a, b liveRef) int { return cmp.Compare(a.pos, b.pos) })

	tmp, err := j.fs.CreateTemp(j.dir, filepath.Base(j.path)+".compact-*")
	if err != nil {
		return fmt.Errorf("journal %s: compact: create temporary file: %w", j.path, err)
	}
	switched := false
	defer func() {
		if !switched {
			tmp.Close()
			j.fs.Remove(tmp.Name())
		}
	}()
	fw := &fileWriter{f: tmp}
	w := bufio.NewWriterSize(fw, 1<<20)
	w.Write(fileHeader())
	off := int64(fileHeaderSize)

	// 1. The live values as of split, read from the old file.
	var (
		cachedPos     int64 = -1
		cachedPayload []byte
		rec           []byte
	)
	for i := range refs {
		if i%256 == 0 && ctx.Err() != nil {
			return fmt.Errorf("journal %s: compact: %w", j.path, ctx.Err())
		}
		r := &refs[i]
		if r.pos != cachedPos {
			if cachedPayload, err = readRecord(old, r.pos-oldBase); err != nil {
				return fmt.Errorf("journal %s: compact: record at offset %d: %w", j.path, r.pos-oldBase, err)
			}
			cachedPos = r.pos
		}
		var value []byte
		found := false
		if err := decodePayload(cachedPayload, func(_ int, op journal.Op) {
			if op.Kind == journal.OpSet && op.Key == r.key {
				value, found = op.Value, true
			}
		}); err != nil || !found {
			return fmt.Errorf("journal %s: compact: record at offset %d does not set key %q (err %v)", j.path, r.pos-oldBase, r.key, err)
		}
		ops := []journal.Op{{Kind: journal.OpSet, Key: r.key, Value: value}}
		size, _ := validateOps(ops)
		rec = appendRecord(rec[:0], ops, size)
		if _, err := w.Write(rec); err != nil {
			return fmt.Errorf("journal %s: compact: write %s: %w", j.path, tmp.Name(), err)
		}
		r.newOff = off
		off += int64(len(rec))
	}
	prefixEnd := off

	// 2. Records appended since split, copied as they are, while Appends
	// go on, until the remaining tail is small.
	from := split
	for round := 0; round < maxTailRounds; round++ {
		j.mu.Lock()
		to := j.durableEnd
		j.mu.Unlock()
		if to-from <= smallTail {
			break
		}
		if err := copyRange(w, old, from-oldBase, to-from); err != nil {
			return fmt.Errorf("journal %s: compact: copy tail to %s: %w", j.path, tmp.Name(), err)
		}
		from = to
		if ctx.Err() != nil {
			return fmt.Errorf("journal %s: compact: %w", j.path, ctx.Err())
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("journal %s: compact: write %s: %w", j.path, tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("journal %s: compact: sync %s: %w", j.path, tmp.Name(), err)
	}

	// 3. The last bit, with the writer held, then the switch.
	j.fileMu.Lock()
	j.mu.Lock()
	to, toRecords, failed := j.durableEnd, j.durableRecords, j.err
	j.mu.Unlock()
	if failed != nil {
		j.fileMu.Unlock()
		return failed
	}
	err = copyRange(w, old, from-oldBase, to-from)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = j.fs.Rename(tmp.Name(), j.path)
	}
	if err != nil {
		j.fileMu.Unlock()
		return fmt.Errorf("journal %s: compact: finish %s: %w", j.path, tmp.Name(), err)
	}
	switched = true
	// The new file is in place; everything from here on goes to it.
	dirErr := j.fs.SyncDir(j.dir)
	newSize := prefixEnd + (to - split)
	newBase := to - newSize
	j.f, j.fileSize, j.base = tmp, newSize, newBase
	j.mu.Lock()
	j.fileBytes = newSize
	j.fileRecords = uint64(len(refs)) + (toRecords - splitRecords)
	j.mu.Unlock()
	j.fileMu.Unlock()
	if err := old.Close(); err != nil {
		j.log.Warn("journal: close replaced file", "path", j.path, "err", err)
	}

	// 4. Point the index entries of carried-over keys into the new file,
	// unless an Append replaced them meanwhile (their pos is then >= split).
	for i := 0; i < len(refs); i += fixupChunk {
		j.mu.Lock()
		for _, r := range refs[i:min(i+fixupChunk, len(refs))] {
			if e, ok := j.index[r.key]; ok && e.pos == r.pos {
				e.pos = newBase + r.newOff
				j.index[r.key] = e
			}
		}
		j.mu.Unlock()
	}
	if dirErr != nil {
		return fmt.Errorf("journal %s: compact: sync directory after rename: %w", j.path, dirErr)
	}
	return nil
}

// collectLive lists the keys whose latest record lies before stream
// position split. It walks the index in chunks, releasing the lock between
// them so Appends are never held up for long; keys changed during the walk
// have pos >= split and are carried by the copied tail instead.
func (j *Journal) collectLive(split int64) []liveRef {
	j.mu.Lock()
	defer j.mu.Unlock()
	refs := make([]liveRef, 0, len(j.index))
	n := 0
	for k, e := range j.index {
		if e.pos < split {
			refs = append(refs, liveRef{key: k, pos: e.pos})
		}
		if n++; n%fixupChunk == 0 {
			j.mu.Unlock()
			j.mu.Lock()
		}
	}
	return refs
}

// readRecord reads and checks the record at off and returns its payload.
func readRecord(f file, off int64) ([]byte, error) {
	var h [recordHeaderSize]byte
	if _, err := f.ReadAt(h[:], off); err != nil {
		return nil, err
	}
	length, sum, ok := parseRecordHeader(h[:])
	if !ok || length > maxRecordSize {
		return nil, fmt.Errorf("record header checksum mismatch")
	}
	payload := make([]byte, length)
	if _, err := f.ReadAt(payload, off+recordHeaderSize); err != nil {
		return nil, err
	}
	if crc32.Checksum(payload, castagnoli) != sum {
		return nil, fmt.Errorf("checksum mismatch")
	}
	return payload, nil
}

func copyRange(w io.Writer, f file, off, n int64) error {
	if n == 0 {
		return nil
	}
	_, err := io.Copy(w, io.NewSectionReader(f, off, n))
	return err
}

// urgentCompactSlack is the growth beyond eight times the live bytes at
// which a compaction runs without waiting for the interval, so that the file
// stays proportional to the live data even under a heavy push load.
const urgentCompactSlack = 256 << 20

// needsCompactionLocked reports whether the file has outgrown the live data.
// j.mu must be held.
func (j *Journal) needsCompactionLocked() bool {
	return j.fileBytes > 2*(fileHeaderSize+j.liveBytes)+compactSlack
}

func (j *Journal) kickCompactor() {
	select {
	case j.compactKick <- struct{}{}:
	default:
	}
}

// compactLoop runs automatic compactions, at most once per interval
// (counting failed attempts, so a failing disk is not retried on every
// write).
func (j *Journal) compactLoop() {
	defer close(j.compactorDone)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var notBefore time.Time
	for {
		select {
		case <-j.ctx.Done():
			return
		case <-j.compactKick:
		case <-timer.C:
		}
		j.mu.Lock()
		need := j.needsCompactionLocked()
		urgent := j.fileBytes > 8*(fileHeaderSize+j.liveBytes)+urgentCompactSlack
		j.mu.Unlock()
		if !need {
			continue
		}
		if wait := time.Until(notBefore); wait > 0 && !urgent {
			timer.Reset(wait)
			continue
		}
		notBefore = time.Now().Add(j.interval)
		if err := j.Compact(j.ctx); err != nil && j.ctx.Err() == nil {
			j.log.Error("journal: automatic compaction failed", "path", j.path, "err", err)
		}
	}
}
