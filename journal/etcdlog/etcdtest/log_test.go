package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/journal/etcdlog"
)

func set(key, value string) journal.Op {
	return journal.Op{Kind: journal.OpSet, Key: key, Value: []byte(value)}
}

// mustCommit appends ops and waits for the commit.
func mustCommit(t testing.TB, l *etcdlog.Log, ops ...journal.Op) journal.Position {
	t.Helper()
	c, err := l.Append(ops...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	return c.Position()
}

// campaign makes l lead, failing the test after 15s.
func campaign(t testing.TB, l *etcdlog.Log) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := l.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestOwnBatchesAreMarkedAndOtherWritersAreNot(t *testing.T) {
	c := startCluster(t, 3, nil)
	prefix := newPrefix()
	la, lb := openLog(t, c.endpoints, prefix, nil), openLog(t, c.endpoints, prefix, nil)
	fa, fb := follow(t, la), follow(t, lb)

	campaign(t, la)
	p1 := mustCommit(t, la, set("g1", "a1"))
	p2 := mustCommit(t, la, set("g2", "a2"), set("g3", "a3"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := la.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	campaign(t, lb)
	p3 := mustCommit(t, lb, journal.Op{Kind: journal.OpDelete, Key: "g1"})

	for _, f := range []*follower{fa, fb} {
		eventually(t, 10*time.Second, "the followers reach the last commit", func() bool { return f.position() >= p3 })
	}
	own := func(f *follower) map[journal.Position]bool {
		m := make(map[journal.Position]bool)
		for _, b := range f.allBatches() {
			m[b.Position] = b.Own
		}
		return m
	}
	for _, tc := range []struct {
		name string
		f    *follower
		want map[journal.Position]bool
	}{
		{"the first leader's follower marks its own batches", fa, map[journal.Position]bool{p1: true, p2: true, p3: false}},
		{"the second leader's follower marks only its own", fb, map[journal.Position]bool{p1: false, p2: false, p3: true}},
	} {
		got := own(tc.f)
		for p, want := range tc.want {
			if g, ok := got[p]; !ok || g != want {
				t.Errorf("%s: batch at %d delivered %v with Own=%v, want Own=%v", tc.name, p, ok, g, want)
			}
		}
	}
	// Each term began with a barrier (a batch of head alone); a follower
	// gets the other writers' changes, and no ops for its own.
	for _, f := range []*follower{fa, fb} {
		barriers := 0
		for _, b := range f.allBatches() {
			if b.Position != p1 && b.Position != p2 && b.Position != p3 {
				barriers++
			}
		}
		if barriers != 2 {
			t.Errorf("%d batches besides the three commits delivered, want the 2 term barriers", barriers)
		}
	}
	if v, ok := fa.group("g1"); ok {
		t.Errorf("g1 = %q on the first leader after the second deleted it", v)
	}
	if v, _ := fb.group("g3"); v != "a3" {
		t.Errorf("g3 = %q on the second leader, want the first leader's a3", v)
	}
	for _, b := range fa.allBatches() {
		if b.Own && len(b.Ops) > 0 {
			t.Errorf("own batch at %d carries %d ops, want none", b.Position, len(b.Ops))
		}
	}
}

func TestAppendOutsideATermFailsWithErrNotLeader(t *testing.T) {
	c := startCluster(t, 1, nil)
	l := openLog(t, c.endpoints, newPrefix(), nil)
	if _, err := l.Append(set("g", "v")); !errors.Is(err, etcdlog.ErrNotLeader) {
		t.Errorf("Append before Campaign: %v, want ErrNotLeader", err)
	}
	if l.IsLeader() {
		t.Error("IsLeader before Campaign")
	}
	select {
	case <-l.TermDone():
	default:
		t.Error("TermDone is not closed outside a term")
	}
	follow(t, l)
	campaign(t, l)
	done := l.TermDone()
	mustCommit(t, l, set("g", "v"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	default:
		t.Error("TermDone not closed by Resign")
	}
	_, err := l.Append(set("g", "w"))
	if !errors.Is(err, etcdlog.ErrNotLeader) || !errors.Is(err, etcdlog.ErrResigned) {
		t.Errorf("Append after Resign: %v, want ErrNotLeader wrapping ErrResigned", err)
	}
}

func TestLeadershipPassesOnAndLeaderNamesTheLeader(t *testing.T) {
	c := startCluster(t, 3, nil)
	prefix := newPrefix()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	la := openLog(t, c.endpoints, prefix, func(cfg *etcdlog.Config) { cfg.AdvertiseURL = "http://a.test" })
	lb := openLog(t, c.endpoints, prefix, func(cfg *etcdlog.Config) { cfg.AdvertiseURL = "http://b.test" })
	if got, err := lb.Leader(ctx); err != nil || got != "" {
		t.Fatalf("Leader before any campaign = %q, %v; want none", got, err)
	}
	follow(t, la)
	follow(t, lb)
	campaign(t, la)
	if got, err := lb.Leader(ctx); err != nil || got != "http://a.test" {
		t.Fatalf("Leader = %q, %v; want http://a.test", got, err)
	}
	won := make(chan error, 1)
	go func() { won <- lb.Campaign(ctx) }()
	select {
	case err := <-won:
		t.Fatalf("a second replica won while the first led: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := la.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-won; err != nil {
		t.Fatalf("campaign after the leader closed: %v", err)
	}
	if got, err := lb.Leader(ctx); err != nil || got != "http://b.test" {
		t.Fatalf("Leader = %q, %v; want http://b.test", got, err)
	}
	mustCommit(t, lb, set("g", "b"))
}

func TestOpenRefusesSettingsThatDifferFromTheClusters(t *testing.T) {
	c := startCluster(t, 1, nil)
	prefix := newPrefix()
	meta := etcdlog.Meta{Codec: 2, Settings: map[string]string{"push.enable-utf8-names": "false", "push.max-series": "100000"}}
	openLog(t, c.endpoints, prefix, func(cfg *etcdlog.Config) { cfg.Meta = meta })
	openLog(t, c.endpoints, prefix, func(cfg *etcdlog.Config) { cfg.Meta = meta })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := etcdlog.Open(ctx, etcdlog.Config{
		Endpoints: c.endpoints, Prefix: prefix,
		Meta: etcdlog.Meta{Codec: 2, Settings: map[string]string{"push.enable-utf8-names": "true", "push.max-series": "100000"}},
	})
	if !errors.Is(err, etcdlog.ErrMetaMismatch) || !strings.Contains(err.Error(), `push.enable-utf8-names: cluster "false", this replica "true"`) {
		t.Errorf("Open with a different setting: %v; want ErrMetaMismatch naming it", err)
	}
	other := newPrefix()
	l, err := etcdlog.Open(ctx, etcdlog.Config{Endpoints: c.endpoints, Prefix: other, Meta: etcdlog.Meta{Codec: 3}})
	if err != nil {
		t.Fatalf("a prefix of its own takes other settings: %v", err)
	}
	l.Close()
}

func TestAReplicaOfALaterCodecRaisesTheClustersAndAnEarlierOneIsRefused(t *testing.T) {
	c := startCluster(t, 1, nil)
	prefix := newPrefix()
	settings := map[string]string{"push.enable-utf8-names": "false"}
	old := etcdlog.Meta{Codec: 2, Settings: settings}
	openLog(t, c.endpoints, prefix, func(cfg *etcdlog.Config) { cfg.Meta = old })
	openLog(t, c.endpoints, prefix, func(cfg *etcdlog.Config) { cfg.Meta = etcdlog.Meta{Codec: 3, OldestCodec: 1, Settings: settings} })
	openLog(t, c.endpoints, prefix, func(cfg *etcdlog.Config) { cfg.Meta = etcdlog.Meta{Codec: 3, OldestCodec: 1, Settings: settings} })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := etcdlog.Open(ctx, etcdlog.Config{Endpoints: c.endpoints, Prefix: prefix, Meta: old})
	if !errors.Is(err, etcdlog.ErrMetaMismatch) || !strings.Contains(err.Error(), "codec version: cluster 3, this replica 2") {
		t.Errorf("Open of the earlier codec after the upgrade: %v; want ErrMetaMismatch naming the codec", err)
	}
	_, err = etcdlog.Open(ctx, etcdlog.Config{Endpoints: c.endpoints, Prefix: prefix,
		Meta: etcdlog.Meta{Codec: 3, OldestCodec: 1, Settings: map[string]string{"push.enable-utf8-names": "true"}}})
	if !errors.Is(err, etcdlog.ErrMetaMismatch) {
		t.Errorf("Open of a later codec with other settings: %v; want ErrMetaMismatch", err)
	}
}

func TestFollowFromACompactedRevisionFailsWithErrCompacted(t *testing.T) {
	c := startCluster(t, 1, nil)
	l := openLog(t, c.endpoints, newPrefix(), nil)
	f := follow(t, l)
	campaign(t, l)
	first := mustCommit(t, l, set("g", "1"))
	var last journal.Position
	for i := range 5 {
		last = mustCommit(t, l, set("g", fmt.Sprint(i+2)))
	}
	eventually(t, 10*time.Second, "the follower applies the commits", func() bool { return f.position() >= last })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.members[0].Server.Compact(ctx, &pb.CompactionRequest{Revision: int64(last), Physical: true}); err != nil {
		t.Fatal(err)
	}
	err := l.Follow(ctx, first, func(journal.Batch) error { return nil })
	if !errors.Is(err, journal.ErrCompacted) {
		t.Fatalf("Follow from a compacted position: %v; want ErrCompacted", err)
	}
	// Loading at the current revision still works, and following from there.
	groups := map[string]string{}
	pos, err := l.Load(ctx, func(k string, v []byte) error { groups[k] = string(v); return nil })
	if err != nil || pos < last || groups["g"] != "6" {
		t.Fatalf("Load after compaction: %v at %d, groups %v", err, pos, groups)
	}
}

func TestCampaignWaitsForFollowToDeliverTheTermsStart(t *testing.T) {
	c := startCluster(t, 1, nil)
	l := openLog(t, c.endpoints, newPrefix(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := l.Campaign(ctx); !errors.Is(err, context.DeadlineExceeded) || l.IsLeader() {
		t.Fatalf("Campaign with no Follow running: %v, leading %v; want it to wait until ctx ends", err, l.IsLeader())
	}
	follow(t, l)
	campaign(t, l)
	mustCommit(t, l, set("g", "v"))
}

func TestLoadReadsEveryGroupInKeyOrderAcrossPages(t *testing.T) {
	c := startCluster(t, 1, nil)
	prefix := newPrefix()
	l := openLog(t, c.endpoints, prefix, nil)
	follow(t, l)
	campaign(t, l)
	const n = 2500 // two and a half pages
	var commits []journal.Commit
	for i := range n {
		cm, err := l.Append(set(fmt.Sprintf("g%05d", i), fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		commits = append(commits, cm)
	}
	pos := waitAll(t, commits)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var keys, values []string
	at, err := openLog(t, c.endpoints, prefix, nil).Load(ctx, func(k string, v []byte) error {
		keys, values = append(keys, k), append(values, string(v))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if at < pos[n-1] {
		t.Errorf("loaded at %d, before the last commit at %d", at, pos[n-1])
	}
	wantKeys, wantValues := make([]string, n), make([]string, n)
	for i := range n {
		wantKeys[i], wantValues[i] = fmt.Sprintf("g%05d", i), fmt.Sprint(i)
	}
	if !slices.Equal(keys, wantKeys) || !slices.Equal(values, wantValues) {
		t.Errorf("loaded %d groups, want g00000=0 ... g%05d=%d in key order", len(keys), n-1, n-1)
	}
}

func TestCampaignNeedsAnAdvertiseURL(t *testing.T) {
	c := startCluster(t, 1, nil)
	l := openLog(t, c.endpoints, newPrefix(), func(cfg *etcdlog.Config) { cfg.AdvertiseURL = "" })
	follow(t, l)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.Campaign(ctx); err == nil || !strings.Contains(err.Error(), "AdvertiseURL") {
		t.Errorf("Campaign without an advertise URL: %v; want an error naming it", err)
	}
}
