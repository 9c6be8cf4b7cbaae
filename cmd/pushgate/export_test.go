package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/journal/gobfile"
	"github.com/pushgate/pushgate/scrape"
	"github.com/pushgate/pushgate/store"
)

// fillJournal starts persistence at path, pushes a few groups of every
// kind (gauges, a histogram, a summary, a merge made later, a failed push)
// and closes it, returning the store it filled.
func fillJournal(t *testing.T, path string) *store.Store {
	t.Helper()
	ctx := context.Background()
	st := store.New(store.Options{})
	p, err := openPersistence(ctx, path, time.Minute, false, st, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	base := time.Unix(1_700_000_000, 123_456_789)
	pushes := []struct {
		labels map[string]string
		method store.Method
		body   string
		at     time.Duration
		fails  bool
	}{
		{map[string]string{"job": "backup", "instance": "db1"}, store.Replace,
			"# HELP backup_duration_seconds How long the backup took.\n# TYPE backup_duration_seconds gauge\nbackup_duration_seconds 812.5\nbackup_files_total{kind=\"full\"} 1234\n", 0, false},
		{map[string]string{"job": "backup", "instance": "db2"}, store.Replace,
			"# TYPE backup_duration_seconds gauge\nbackup_duration_seconds 17\n", time.Second, false},
		{map[string]string{"job": "batch", "path": "/var/tmp"}, store.Replace,
			"# TYPE batch_latency_seconds histogram\nbatch_latency_seconds_bucket{le=\"0.5\"} 3\nbatch_latency_seconds_bucket{le=\"+Inf\"} 5\nbatch_latency_seconds_sum 4.25\nbatch_latency_seconds_count 5\n" +
				"# TYPE batch_rpc_seconds summary\nbatch_rpc_seconds{quantile=\"0.9\"} 0.12\nbatch_rpc_seconds_sum 9\nbatch_rpc_seconds_count 70\n", 2 * time.Second, false},
		{map[string]string{"job": "batch", "path": "/var/tmp"}, store.Merge, "batch_items 42\n", 3 * time.Second, false},
		// A type conflict with db1's gauge: the push fails and stamps db2's failure time.
		{map[string]string{"job": "backup", "instance": "db2"}, store.Replace,
			"# TYPE backup_duration_seconds counter\nbackup_duration_seconds 1\n", 4 * time.Second, true},
	}
	for _, ps := range pushes {
		decoded, err := exposition.Decode(strings.NewReader(ps.body), "", exposition.DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = st.Push(ctx, store.Push{Key: groupkey.New(ps.labels), Method: ps.method, Families: decoded.Families, Time: base.Add(ps.at)})
		if (err != nil) != ps.fails {
			t.Fatalf("push %v: err %v, want failure %v", ps.labels, err, ps.fails)
		}
	}
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	return st
}

// closeTimes reports whether a and b are within a microsecond: an import
// reads push times from the push_time_seconds gauges, float64 seconds.
func closeTimes(a, b time.Time) bool {
	d := a.Sub(b)
	return d > -time.Microsecond && d < time.Microsecond
}

// requireSameGroups checks that two stores hold the same groups, push and
// failure times, families and family push times, and scrape alike.
func requireSameGroups(t *testing.T, got, want *store.Store) {
	t.Helper()
	gg, wg := got.Groups(), want.Groups()
	if len(gg) != len(wg) {
		t.Fatalf("%d groups, want %d", len(gg), len(wg))
	}
	for i := range wg {
		g, w := gg[i], wg[i]
		if g.Key().String() != w.Key().String() || !closeTimes(g.PushTime(), w.PushTime()) || !closeTimes(g.FailureTime(), w.FailureTime()) {
			t.Errorf("group %s pushed %v failed %v, want %s pushed %v failed %v",
				g.Key(), g.PushTime(), g.FailureTime(), w.Key(), w.PushTime(), w.FailureTime())
		}
		gf, wf := g.Families(), w.Families()
		if len(gf) != len(wf) {
			t.Fatalf("group %s: %d families, want %d", w.Key(), len(gf), len(wf))
		}
		for j := range wf {
			a, _ := gf[j].Decode()
			b, _ := wf[j].Decode()
			if !proto.Equal(a, b) || !closeTimes(gf[j].LastPush(), wf[j].LastPush()) {
				t.Errorf("group %s family %s differs: %v at %v, want %v at %v", w.Key(), wf[j].Name(), a, gf[j].LastPush(), b, wf[j].LastPush())
			}
		}
	}
	if a, b := scrapeOf(t, got), scrapeOf(t, want); a != b {
		t.Errorf("scrapes differ:\n%s\nwant:\n%s", a, b)
	}
}

func scrapeOf(t *testing.T, st *store.Store) string {
	t.Helper()
	var b bytes.Buffer
	sn := st.Snapshot()
	defer sn.Release()
	if _, err := scrape.NewWriter().Write(&b, sn, exposition.NewFormat(exposition.EncodingText), nil); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestAnExportedFileHoldsEveryGroupAsTheReferenceStoresIt exports a journal,
// reads the file with the reference format's reader, and compares it with
// the store, family by family, push_time_seconds and
// push_failure_time_seconds included.
func TestAnExportedFileHoldsEveryGroupAsTheReferenceStoresIt(t *testing.T) {
	dir := t.TempDir()
	journalPath := filepath.Join(dir, "state.journal")
	st := fillJournal(t, journalPath)
	out := filepath.Join(dir, "pushgateway.data")
	n, err := exportReference(context.Background(), journalPath, out, false, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("exported %d groups, want 3", n)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	groups, err := gobfile.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	stored := st.Groups()
	if len(groups) != len(stored) {
		t.Fatalf("file holds %d groups, the store %d", len(groups), len(stored))
	}
	for i, g := range stored {
		rg := groups[i]
		if groupkey.New(rg.Labels).String() != g.Key().String() {
			t.Fatalf("group %d is %v, want %s", i, rg.Labels, g.Key())
		}
		fams := g.Families()
		if len(rg.Families) != len(fams) {
			t.Fatalf("group %s: %d families in the file, %d stored", g.Key(), len(rg.Families), len(fams))
		}
		for j, sf := range fams {
			want, err := sf.Decode()
			if err != nil {
				t.Fatal(err)
			}
			// The time beside each family is what the reference shows as its
			// time_stamp: the push that wrote it; for the failure time of a
			// group that never failed, its last push.
			wantTime := sf.LastPush()
			switch sf.Name() {
			case store.PushTimeName:
				wantTime = g.PushTime()
			case store.PushFailureTimeName:
				if wantTime = g.FailureTime(); wantTime.IsZero() {
					wantTime = g.PushTime()
				}
			}
			if !proto.Equal(rg.Families[j].Family, want) || !rg.Families[j].LastPush.Equal(wantTime) {
				t.Errorf("group %s family %s: file has %v at %v, want %v at %v", g.Key(), sf.Name(), rg.Families[j].Family, rg.Families[j].LastPush, want, wantTime)
			}
		}
		times := map[string]time.Time{store.PushTimeName: g.PushTime(), store.PushFailureTimeName: g.FailureTime()}
		for _, rf := range rg.Families {
			if want, ok := times[rf.Family.GetName()]; ok {
				if got := rf.Family.GetMetric()[0].GetGauge().GetValue(); got != unixSecondsOf(want) {
					t.Errorf("group %s: %s = %v, want %v", g.Key(), rf.Family.GetName(), got, unixSecondsOf(want))
				}
			}
		}
	}
}

func unixSecondsOf(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

// TestAnExportedFileImportsBackToTheSameState is the round trip: journal →
// reference file → import, with the export replacing the journal in place
// (the Debian rollback path), and the original backup refreshed.
func TestAnExportedFileImportsBackToTheSameState(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pushgateway.data")
	// An earlier import left a backup behind; it must not survive as stale.
	if err := os.WriteFile(path+".reference-backup", []byte("an older reference file"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := fillJournal(t, path)
	logger := slog.New(slog.DiscardHandler)
	if _, err := exportReference(context.Background(), path, path, false, logger); err != nil {
		t.Fatal(err)
	}
	exported, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !gobfile.Sniff(exported[:min(len(exported), gobfile.SniffLen)]) {
		t.Fatal("the path does not hold a reference file after the export")
	}
	back := store.New(store.Options{})
	p, err := openPersistence(context.Background(), path, time.Minute, false, back, prometheus.NewRegistry(), logger)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	requireSameGroups(t, back, st)
	backup, err := os.ReadFile(path + ".reference-backup")
	if err != nil || !bytes.Equal(backup, exported) {
		t.Fatalf("the backup is not the file just imported (err %v)", err)
	}
}

func TestAnExportIsRefusedWhenItCannotBeRight(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.DiscardHandler)
	ctx := context.Background()

	busy := filepath.Join(dir, "busy.journal")
	fillJournal(t, busy)
	p, err := openPersistence(ctx, busy, time.Minute, false, store.New(store.Options{}), prometheus.NewRegistry(), logger)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()

	ref := filepath.Join(dir, "reference.data")
	var buf bytes.Buffer
	if err := gobfile.Write(&buf, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ref, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name, from, want string
	}{
		{"a journal a running gateway holds", busy, "another process uses this journal"},
		{"a file that is already in the reference format", ref, "already in the reference Pushgateway's format"},
		{"a file that does not exist", filepath.Join(dir, "typo.journal"), "no such file"},
	}
	for _, tc := range cases {
		out := filepath.Join(dir, "out-"+filepath.Base(tc.from))
		_, err := exportReference(ctx, tc.from, out, false, logger)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("%s: an export file was written", tc.name)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "typo.journal")); err == nil {
		t.Error("exporting a missing file created it")
	}
}
