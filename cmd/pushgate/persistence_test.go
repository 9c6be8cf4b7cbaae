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
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/journal/gobfile"
	"github.com/pushgate/pushgate/scrape"
	"github.com/pushgate/pushgate/store"
)

// openPersistence opens and loads the journal at path into st, its
// metrics registered in reg, as run does with --persistence.file.
func openPersistence(ctx context.Context, path string, interval time.Duration, forceEmpty bool, st *store.Store, reg *prometheus.Registry, logger *slog.Logger) (*persistence, error) {
	p := newPersistence(path, interval, forceEmpty, st, logger)
	if err := reg.Register(p.collector()); err != nil {
		return nil, err
	}
	if err := p.start(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

func gauge(name string, labels map[string]string, v float64) *dto.MetricFamily {
	m := &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(v)}}
	for n, val := range labels {
		m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(n), Value: proto.String(val)})
	}
	return &dto.MetricFamily{Name: proto.String(name), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{m}}
}

// TestAReferencePersistenceFileIsImportedOnce writes a file in the reference
// Pushgateway's gob format, starts persistence on it, and checks the groups,
// their push times, the backup of the original, and that a restart reads
// pushgate's own journal from the same path.
func TestAReferencePersistenceFileIsImportedOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pushgateway.db")
	pushed := time.Unix(1_700_000_123, 250_000_000)
	labels := map[string]string{"job": "backup", "instance": "db1"}
	var ref bytes.Buffer
	err := gobfile.Write(&ref, []gobfile.Group{{
		Labels: labels,
		Families: []gobfile.Family{
			{LastPush: pushed, Family: gauge("backup_duration_seconds", labels, 812.5)},
			{LastPush: pushed, Family: gauge("push_time_seconds", labels, 1_700_000_123.25)},
			{LastPush: pushed, Family: gauge("push_failure_time_seconds", labels, 0)},
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, ref.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	ctx := context.Background()

	st := store.New(store.Options{})
	p, err := openPersistence(ctx, path, time.Minute, false, st, prometheus.NewRegistry(), logger)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	g := st.Group(groupkey.New(labels))
	if g == nil {
		t.Fatal("the imported group is missing")
	}
	if !g.PushTime().Equal(pushed) {
		t.Errorf("push time = %v, want %v", g.PushTime(), pushed)
	}
	var out bytes.Buffer
	if _, err := scrape.NewWriter().Write(&out, st.Snapshot(), exposition.NewFormat(exposition.EncodingText), nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `backup_duration_seconds{instance="db1",job="backup"} 812.5`) {
		t.Errorf("imported value missing from the scrape:\n%s", out.String())
	}
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	backup, err := os.ReadFile(path + ".reference-backup")
	if err != nil || !bytes.Equal(backup, ref.Bytes()) {
		t.Fatalf("backup of the original: err %v, equal %v", err, bytes.Equal(backup, ref.Bytes()))
	}

	// The path now holds pushgate's journal: a restart reads it, and does
	// not import again.
	head, _ := os.ReadFile(path)
	if gobfile.Sniff(head) {
		t.Fatal("the path still holds a reference file after the import")
	}
	st2 := store.New(store.Options{})
	p2, err := openPersistence(ctx, path, time.Minute, false, st2, prometheus.NewRegistry(), logger)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	defer p2.close()
	if g := st2.Group(groupkey.New(labels)); g == nil || !g.PushTime().Equal(pushed) {
		t.Fatalf("after restart the group is %v", g)
	}
}

func TestACorruptJournalStopsTheStartUnlessToldToStartEmpty(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.journal")
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	st := store.New(store.Options{})
	p, err := openPersistence(ctx, path, time.Minute, false, st, prometheus.NewRegistry(), logger)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		decoded, _ := exposition.Decode(strings.NewReader("m 1\n"), "", exposition.DecodeOptions{})
		k := groupkey.New(map[string]string{"job": "j", "instance": string(rune('a' + i))})
		if _, err := st.Push(ctx, store.Push{Key: k, Families: decoded.Families, Time: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	p.close()
	data, _ := os.ReadFile(path)
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = openPersistence(ctx, path, time.Minute, false, store.New(store.Options{}), prometheus.NewRegistry(), logger)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "offset") {
		t.Fatalf("err = %v, want a corruption error naming the file and offset", err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(after, data) {
		t.Fatal("the corrupt file was modified")
	}
	st3 := store.New(store.Options{})
	p3, err := openPersistence(ctx, path, time.Minute, true, st3, prometheus.NewRegistry(), logger)
	if err != nil {
		t.Fatalf("start-empty: %v", err)
	}
	defer p3.close()
	if n := st3.Stats().Groups; n != 0 {
		t.Fatalf("start-empty store has %d groups", n)
	}
	moved, _ := filepath.Glob(path + ".corrupt-*")
	if len(moved) != 1 {
		t.Fatalf("corrupt file not moved aside: %v", moved)
	}
}

// TestImportingAPoisonedReferenceFileKeepsThePushedData imports the
// poisoning case of docs/differences.md (a rejected push left the empty group
// {instance="",job="s1"} beside {job="s1"}, which holds the data): the data
// is kept, across a restart too, and the start says what was dropped.
func TestImportingAPoisonedReferenceFileKeepsThePushedData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pushgateway.db")
	pushed, failed := time.Unix(1_700_000_000, 0), time.Unix(1_700_000_100, 0)
	data := map[string]string{"job": "s1"}
	empty := map[string]string{"job": "s1", "instance": ""}
	// Both groups' series carry these labels, as the reference stores them.
	withInstance := map[string]string{"job": "s1", "instance": ""}
	var ref bytes.Buffer
	err := gobfile.Write(&ref, []gobfile.Group{
		{Labels: data, Families: []gobfile.Family{
			{LastPush: pushed, Family: gauge("backup_ok", withInstance, 1)},
			{LastPush: pushed, Family: gauge("push_time_seconds", withInstance, float64(pushed.Unix()))},
			{LastPush: pushed, Family: gauge("push_failure_time_seconds", withInstance, 0)},
		}},
		{Labels: empty, Families: []gobfile.Family{
			{LastPush: failed, Family: gauge("push_time_seconds", withInstance, 0)},
			{LastPush: failed, Family: gauge("push_failure_time_seconds", withInstance, float64(failed.Unix()))},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, ref.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	st := store.New(store.Options{Logger: logger})
	p, err := openPersistence(context.Background(), path, time.Minute, false, st, prometheus.NewRegistry(), logger)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`level=WARN msg="imported group dropped" group="{instance=\"\",job=\"s1\"}"`,
		`level=WARN msg="imported a reference Pushgateway persistence file"`,
		`groups=1 partial_groups=0 merged_groups=0 dropped_groups=1 dropped_families=0`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %s:\n%s", want, logs.String())
		}
	}

	st2 := store.New(store.Options{})
	p2, err := openPersistence(context.Background(), path, time.Minute, false, st2, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	defer p2.close()
	g := st2.Group(groupkey.New(data))
	if g == nil || !g.PushTime().Equal(pushed) || len(st2.Groups()) != 1 {
		t.Fatalf("after restart: group %v, %d groups; want {job=\"s1\"} pushed at %v, alone", g, len(st2.Groups()), pushed)
	}
	var out bytes.Buffer
	if _, err := scrape.NewWriter().Write(&out, st2.Snapshot(), exposition.NewFormat(exposition.EncodingText), nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `backup_ok{instance="",job="s1"} 1`) {
		t.Errorf("the pushed value is lost:\n%s", out.String())
	}
}
