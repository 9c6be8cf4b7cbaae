package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pushgate/pushgate/journal/filejournal"
	"github.com/pushgate/pushgate/journal/gobfile"
	"github.com/pushgate/pushgate/refimport"
	"github.com/pushgate/pushgate/store"
	"github.com/pushgate/pushgate/web"
)

// persistence is the file journal behind --persistence.file: every
// change is synced to it before it is acknowledged.
type persistence struct {
	st         *store.Store
	path       string
	interval   time.Duration
	forceEmpty bool
	logger     *slog.Logger
	// j is the journal, nil until start loaded it.
	j atomic.Pointer[filejournal.Journal]
}

// newPersistence returns the journal at path for st, not yet loaded:
// start loads it.
func newPersistence(path string, interval time.Duration, forceEmpty bool, st *store.Store, logger *slog.Logger) *persistence {
	return &persistence{st: st, path: path, interval: interval, forceEmpty: forceEmpty, logger: logger}
}

func (p *persistence) current() *store.Store               { return p.st }
func (p *persistence) collector() prometheus.Collector     { return newJournalCollector(p) }
func (p *persistence) handler(h *web.Handler) http.Handler { return h }
func (p *persistence) ready() bool                         { return p.j.Load() != nil }

// start opens (or creates) the journal and loads it into the store. A
// reference Pushgateway file found at the path is imported first: the
// original is kept as <path>.reference-backup. A corrupt journal stops the
// start with an error naming the file and offset, unless forceEmpty is set,
// in which case the file is moved aside and the store starts empty.
func (p *persistence) start(ctx context.Context) error {
	path, st, logger := p.path, p.st, p.logger
	opts := filejournal.Options{Logger: logger, CompactInterval: p.interval}
	isRef, err := isReferenceFile(path)
	if err != nil {
		return err
	}
	if isRef {
		if err := importReference(ctx, path, opts, st, logger); err != nil {
			return err
		}
	}
	start := time.Now()
	j, err := loadJournal(ctx, path, opts, st)
	var corrupt *filejournal.CorruptionError
	if errors.As(err, &corrupt) && p.forceEmpty {
		aside := fmt.Sprintf("%s.corrupt-%s", path, time.Now().UTC().Format("20060102T150405Z"))
		if rerr := os.Rename(path, aside); rerr != nil {
			return fmt.Errorf("move corrupt journal aside: %w", rerr)
		}
		logger.Warn("corrupt journal moved aside; starting with an empty store", "err", err, "moved_to", aside)
		// The journal validates the whole file before loading any record,
		// so st is still empty here.
		j, err = loadJournal(ctx, path, opts, st)
	}
	if err != nil {
		if errors.As(err, &corrupt) {
			return fmt.Errorf("%w (or start with --persistence.start-empty, which moves the file aside)", err)
		}
		return err
	}
	st.SetJournal(j)
	// Loading decodes every record and leaves its garbage behind: at
	// 10,000 groups of the bench payload the process held 233 MiB after
	// the load, for a 104 MB live heap, and the runtime returns such idle
	// memory to the system only slowly. Return it now, once.
	debug.FreeOSMemory()
	logger.Info("persistence file loaded", "file", path, "groups", st.Stats().Groups, "duration", time.Since(start))
	p.j.Store(j)
	logger.Info("ready", "persistence", path, "groups", st.Stats().Groups)
	return nil
}

// loadJournal opens the journal at path and loads its records into st,
// decoding them on every CPU (store.Restorer).
func loadJournal(ctx context.Context, path string, opts filejournal.Options, st *store.Store) (*filejournal.Journal, error) {
	rs := st.NewRestorer(0)
	j, err := filejournal.Open(ctx, path, opts, rs.Restore)
	if cerr := rs.Close(); cerr != nil && err == nil {
		// The last records handed over failed after Open returned.
		err = errors.Join(fmt.Errorf("journal %s: %w", path, cerr), j.Close())
		j = nil
	}
	return j, err
}

// status reports the journal's state for the status page: only its path
// while it loads.
func (p *persistence) status() web.StorageStatus {
	j := p.j.Load()
	if j == nil {
		return web.JournalStatus{Path: p.path}
	}
	s := j.Stats()
	return web.JournalStatus{
		Path: s.Path, FileBytes: s.FileBytes, LiveBytes: s.LiveBytes,
		LastCompaction: s.LastCompaction, Compactions: s.Compactions, Syncs: s.SyncCount, Err: j.Err(),
	}
}

// close flushes and closes the journal.
func (p *persistence) close() error {
	j := p.j.Load()
	if j == nil {
		return nil
	}
	if err := j.Close(); err != nil {
		return fmt.Errorf("close the persistence file: %w", err)
	}
	return nil
}

// isReferenceFile reports whether path holds a reference Pushgateway
// persistence file (gob) rather than a pushgate journal.
func isReferenceFile(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open persistence file: %w", err)
	}
	defer f.Close()
	head := make([]byte, gobfile.SniffLen)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("read persistence file %s: %w", path, err)
	}
	return n > 0 && gobfile.Sniff(head[:n]), nil
}

// importReference converts a reference persistence file at path into a
// pushgate journal in place. The original is first copied to
// <path>.reference-backup; the new journal is written beside it and renamed
// over path, so a crash at any point leaves either the original or the
// complete journal at path.
func importReference(ctx context.Context, path string, opts filejournal.Options, st *store.Store, logger *slog.Logger) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open reference file: %w", err)
	}
	groups, err := gobfile.Read(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("read reference Pushgateway file %s: %w", path, err)
	}
	res := refimport.Import(st, groups, logger)

	backup := path + ".reference-backup"
	if err := copyFileSynced(path, backup); err != nil {
		return fmt.Errorf("back up reference file: %w", err)
	}
	tmp := path + ".import"
	_ = os.Remove(tmp)
	j, err := filejournal.Open(ctx, tmp, opts, func(string, []byte) error { return nil })
	if err != nil {
		return fmt.Errorf("create journal for import: %w", err)
	}
	ops, err := st.JournalOps()
	if err != nil {
		j.Close()
		return fmt.Errorf("encode imported groups: %w", err)
	}
	if len(ops) > 0 {
		ticket, err := j.Append(ops...)
		if err == nil {
			err = ticket.Wait(ctx)
		}
		if err != nil {
			j.Close()
			return fmt.Errorf("write imported groups: %w", err)
		}
	}
	if err := j.Close(); err != nil {
		return fmt.Errorf("close imported journal: %w", err)
	}
	_ = os.Remove(tmp + ".lock")
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replace reference file with journal: %w", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return err
	}
	level := slog.LevelInfo
	if res.DroppedGroups+res.DroppedFamilies > 0 {
		level = slog.LevelWarn
	}
	logger.Log(ctx, level, "imported a reference Pushgateway persistence file", "file", path, "backup", backup,
		"groups", res.Groups, "partial_groups", res.Partial, "merged_groups", res.Merged,
		"dropped_groups", res.DroppedGroups, "dropped_families", res.DroppedFamilies)
	return nil
}

// copyFileSynced copies src to dst through a synced temporary file renamed
// over dst, so dst is always a whole copy: the previous one until the
// rename, the new one after it. A backup left by an earlier import (before a
// rollback to the reference and a new swap) is replaced, never kept stale.
func copyFileSynced(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.CreateTemp(filepath.Dir(dst), filepath.Base(dst)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			out.Close()
			os.Remove(out.Name())
		}
	}()
	if _, err := io.Copy(out, in); err != nil {
		return err
	}
	if err := out.Sync(); err != nil {
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if err := os.Rename(out.Name(), dst); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dst))
}

// syncDir fsyncs a directory so that renames and creations in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
