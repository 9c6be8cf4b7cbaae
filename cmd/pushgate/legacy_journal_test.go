package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pushgate/pushgate/groupcodec/groupcodectest"
	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/journal/filejournal"
	"github.com/pushgate/pushgate/store"
)

// rewriteJournal replaces the journal at path with one holding st's groups
// as records of the given groupcodec version, as an earlier pushgate wrote
// them.
func rewriteJournal(t *testing.T, path string, version byte, st *store.Store) {
	t.Helper()
	ctx := context.Background()
	ops, err := st.JournalOps()
	if err != nil {
		t.Fatal(err)
	}
	for i := range ops {
		v, err := groupcodectest.Legacy(version, ops[i].Value)
		if err != nil {
			t.Fatal(err)
		}
		ops[i].Value = v
	}
	j, err := filejournal.Open(ctx, path, filejournal.Options{}, func(string, []byte) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	cm, err := j.Append(append([]journal.Op{{Kind: journal.OpDeleteAll}}, ops...)...)
	if err == nil {
		err = cm.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestAJournalOfAnEarlierVersionLoadsAndExports(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version byte
	}{
		{"a journal of version 1 records loads and exports", 1},
		{"a journal of version 2 records loads and exports", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			logger := slog.New(slog.DiscardHandler)
			path := filepath.Join(t.TempDir(), "pushgate.journal")
			want := fillJournal(t, path)
			rewriteJournal(t, path, tc.version, want)

			got := store.New(store.Options{})
			p, err := openPersistence(ctx, path, time.Minute, false, got, prometheus.NewRegistry(), logger)
			if err != nil {
				t.Fatal(err)
			}
			requireSameGroups(t, got, want)
			if err := p.close(); err != nil {
				t.Fatal(err)
			}

			ref := filepath.Join(t.TempDir(), "pushgateway.data")
			if n, err := exportReference(ctx, path, ref, false, logger); err != nil || n != len(want.Groups()) {
				t.Fatalf("export: %d groups, %v; want %d", n, err, len(want.Groups()))
			}
			back := store.New(store.Options{})
			bp, err := openPersistence(ctx, ref, time.Minute, false, back, prometheus.NewRegistry(), logger)
			if err != nil {
				t.Fatal(err)
			}
			defer bp.close()
			requireSameGroups(t, back, want)
		})
	}
}
