package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/pushgate/pushgate/store"
	"github.com/pushgate/pushgate/web"
)

// TestMemoryAndFileStorageReportReadinessAndStatus pins what run and the
// status page read of the two local backends: not ready before start, a
// memory store with no status (the page says "in memory only"), a journal
// that shows its path while it loads and its file once loaded.
func TestMemoryAndFileStorageReportReadinessAndStatus(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	path := filepath.Join(t.TempDir(), "pushgate.journal")
	for _, c := range []struct {
		name          string
		backend       storage
		before, after func(web.StorageStatus) bool
	}{
		{"memory has no status", &memory{st: store.New(store.Options{}), logger: logger},
			func(s web.StorageStatus) bool { return s == nil },
			func(s web.StorageStatus) bool { return s == nil }},
		{"the journal shows its path while it loads, then its file", newPersistence(path, time.Minute, false, store.New(store.Options{}), logger),
			func(s web.StorageStatus) bool { return s == web.StorageStatus(web.JournalStatus{Path: path}) },
			func(s web.StorageStatus) bool {
				j, ok := s.(web.JournalStatus)
				return ok && j.Path == path && j.FileBytes > 0 && j.Err == nil
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.backend
			if b.ready() {
				t.Error("ready before start")
			}
			if s := b.status(); !c.before(s) {
				t.Errorf("status before start: %#v", s)
			}
			if err := b.start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := b.close(); err != nil {
					t.Error(err)
				}
			})
			if !b.ready() {
				t.Error("not ready after start")
			}
			if s := b.status(); !c.after(s) {
				t.Errorf("status after start: %#v", s)
			}
			if b.current() == nil {
				t.Error("no current store")
			}
		})
	}
}
