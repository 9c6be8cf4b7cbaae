package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"

	"github.com/pushgate/pushgate/journal/filejournal"
	"github.com/pushgate/pushgate/journal/gobfile"
	"github.com/pushgate/pushgate/store"
)

// runExport carries out --persistence.export-reference and returns the exit
// code: the state in --persistence.file, written in the reference
// Pushgateway's format to the given path.
func runExport(c *config, logger *slog.Logger) int {
	n, err := exportReference(context.Background(), c.persistenceFile, c.exportReference, c.utf8Names, logger)
	if err != nil {
		logger.Error("export to the reference format failed", "err", err)
		return 1
	}
	logger.Info("exported the state in the reference Pushgateway's format", "from", c.persistenceFile, "to", c.exportReference, "groups", n)
	return 0
}

// exportReference loads pushgate's journal at from and writes every group
// (labels, families, push and failure times) to the path to in the reference
// Pushgateway's persistence format, for rolling back. It takes the journal's
// lock, so it refuses to run beside a gateway using the same file. The file
// written is complete or absent (written beside, synced, then renamed), gets
// the owner and mode of the journal (so a file exported by root stays
// readable by the service user), and may replace the journal itself.
func exportReference(ctx context.Context, from, to string, utf8Names bool, logger *slog.Logger) (groups int, err error) {
	info, err := os.Stat(from)
	if err != nil {
		return 0, fmt.Errorf("persistence file: %w", err)
	}
	isRef, err := isReferenceFile(from)
	if err != nil {
		return 0, err
	}
	if isRef {
		return 0, fmt.Errorf("%s is already in the reference Pushgateway's format (no pushgate has imported it yet)", from)
	}
	st := store.New(store.Options{UTF8Names: utf8Names, Logger: logger})
	j, err := filejournal.Open(ctx, from, filejournal.Options{Logger: logger}, st.Restore)
	if err != nil {
		return 0, fmt.Errorf("load %s: %w", from, err)
	}
	refGroups, err := referenceGroups(st)
	// The journal is closed before the export is renamed into place, as it
	// may replace the journal itself.
	if cerr := j.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", from, cerr)
	}
	if err != nil {
		return 0, err
	}
	if err := writeReferenceFile(to, refGroups, info); err != nil {
		return 0, err
	}
	return len(refGroups), nil
}

// referenceGroups converts the store's groups, through its read API, to the
// reference's file model. The push_time_seconds and
// push_failure_time_seconds families come along as the reference stores
// them: as gauges the reference reads the push times from.
func referenceGroups(st *store.Store) ([]gobfile.Group, error) {
	var out []gobfile.Group
	for _, g := range st.Groups() {
		rg := gobfile.Group{Labels: g.Key().Map()}
		for _, f := range g.Families() {
			mf, err := f.Decode()
			if err != nil {
				return nil, fmt.Errorf("group %s: %w", g.Key(), err)
			}
			rg.Families = append(rg.Families, gobfile.Family{LastPush: g.FamilyTime(f), Family: mf})
		}
		out = append(out, rg)
	}
	return out, nil
}

// writeReferenceFile writes groups to path through a synced temporary file
// in the same directory, renamed into place, with like's mode and (when
// allowed) owner.
func writeReferenceFile(path string, groups []gobfile.Group, like os.FileInfo) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".export-*")
	if err != nil {
		return fmt.Errorf("create export file: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(like.Mode().Perm()); err != nil {
		return fmt.Errorf("set the export file's mode: %w", err)
	}
	if sys, ok := like.Sys().(*syscall.Stat_t); ok {
		// Only root may give the file away; anyone else already owns it.
		if err := tmp.Chown(int(sys.Uid), int(sys.Gid)); err != nil && !errors.Is(err, os.ErrPermission) {
			return fmt.Errorf("set the export file's owner: %w", err)
		}
	}
	w := bufio.NewWriterSize(tmp, 1<<20)
	if err := gobfile.Write(w, groups); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write export file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync export file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close export file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename export file into place: %w", err)
	}
	return syncDir(filepath.Dir(path))
}
