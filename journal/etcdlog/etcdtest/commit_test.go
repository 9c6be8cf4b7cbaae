package etcdtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/journal/etcdlog"
)

// incompressible returns n random bytes: s2 cannot shrink them, so they
// take their full size in a transaction.
func incompressible(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// waitAll waits for every commit and returns their positions.
func waitAll(t testing.TB, commits []journal.Commit) []journal.Position {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pos := make([]journal.Position, len(commits))
	for i, c := range commits {
		if err := c.Wait(ctx); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
		pos[i] = c.Position()
	}
	return pos
}

func TestAppendsCollectedDuringACommitShareTransactionsOfAtMost127Groups(t *testing.T) {
	c := startCluster(t, 3, nil)
	prefix := newPrefix()
	link := newProxy(t, c.endpoints[0])
	leader := openLog(t, []string{link.endpoint}, prefix, nil)
	follow(t, leader)
	watcher := follow(t, openLog(t, c.endpoints, prefix, nil))
	campaign(t, leader)

	// With the link paused, the first commit waits in flight and every
	// later Append collects: 300 groups, and 100 pushes to group "hot"
	// between them.
	link.pause()
	var commits []journal.Commit
	for i := range 400 {
		op := set(fmt.Sprint("g", i), fmt.Sprint("v", i))
		if i%4 == 3 {
			op = set("hot", fmt.Sprint("hot", i))
		}
		cm, err := leader.Append(op)
		if err != nil {
			link.unpause()
			t.Fatal(err)
		}
		commits = append(commits, cm)
	}
	link.unpause()
	pos := waitAll(t, commits)
	for i := 1; i < len(pos); i++ {
		if pos[i] < pos[i-1] {
			t.Fatalf("append %d committed at %d, before append %d at %d", i, pos[i], i-1, pos[i-1])
		}
	}
	last := pos[len(pos)-1]
	eventually(t, 10*time.Second, "the watcher reaches the last commit", func() bool { return watcher.position() >= last })

	var batches, hotWrites int
	for _, b := range watcher.allBatches() {
		if len(b.Ops) == 0 {
			continue // the term's barrier
		}
		batches++
		if len(b.Ops) > 127 {
			t.Errorf("batch at %d holds %d group ops, over 127", b.Position, len(b.Ops))
		}
		for _, op := range b.Ops {
			if op.Key == "hot" {
				hotWrites++
			}
		}
	}
	// 301 distinct groups: the commit in flight, then ceil(301/127) = 3.
	if batches > 4 {
		t.Errorf("%d transactions for 400 appends collected while one was in flight, want at most 4", batches)
	}
	if hotWrites > batches {
		t.Errorf("group hot written %d times in %d transactions: pushes to one group were not coalesced", hotWrites, batches)
	}
	if v, _ := watcher.group("hot"); v != "hot399" {
		t.Errorf("hot = %q, want the last push, hot399", v)
	}
	if v, _ := watcher.group("g298"); v != "v298" {
		t.Errorf("g298 = %q, want v298", v)
	}
}

func TestAnAppenderReleasedByACommitJoinsTheAppendsQueuedMeanwhile(t *testing.T) {
	c := startCluster(t, 1, nil)
	prefix := newPrefix()
	link := newProxy(t, c.endpoints[0])
	leader := openLog(t, []string{link.endpoint}, prefix, func(cfg *etcdlog.Config) { cfg.CommitLinger = time.Minute })
	follow(t, leader)
	campaign(t, leader)

	// The link holds the first append's transaction (the bytes naming its
	// key) in flight while two more appends are queued.
	sent, release := make(chan struct{}), make(chan struct{})
	var once, unblock sync.Once
	free := func() { unblock.Do(func() { close(release) }) }
	t.Cleanup(free)
	link.ModifyTx(func(data []byte) []byte {
		if bytes.Contains(data, []byte("groups/first")) {
			once.Do(func() { close(sent) })
			<-release
		}
		return data
	})
	first, err := leader.Append(set("first", "1"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-sent:
	case <-time.After(10 * time.Second):
		t.Fatal("the first append's transaction did not leave within 10s")
	}
	var queued []journal.Commit
	for _, key := range []string{"q1", "q2"} {
		cm, err := leader.Append(set(key, "1"))
		if err != nil {
			t.Fatal(err)
		}
		queued = append(queued, cm)
	}
	// The committer waits for the appenders a commit released no longer
	// than that commit took: let this one take a second.
	time.Sleep(time.Second)
	free()
	waitAll(t, []journal.Commit{first})

	// The appender the first commit released appends again, as a client
	// answered pushes again: its append joins the queued ones.
	again, err := leader.Append(set("again", "1"))
	if err != nil {
		t.Fatal(err)
	}
	pos := waitAll(t, append(queued, again))
	if pos[0] != pos[1] || pos[2] != pos[0] {
		t.Errorf("the queued appends committed at %d and %d, the released appender's at %d: want one transaction", pos[0], pos[1], pos[2])
	}
}

func TestTransactionsNearTheByteLimitAreAcceptedByEtcd(t *testing.T) {
	c := startCluster(t, 1, nil)
	prefix := newPrefix()
	leader := openLog(t, c.endpoints, prefix, nil)
	follow(t, leader)
	watcher := follow(t, openLog(t, c.endpoints, prefix, nil))
	campaign(t, leader)

	// One group just under the limit, alone in its transaction.
	big := incompressible(1400<<10-2048, 1)
	mustCommit(t, leader, set("big", string(big)))
	// 40 incompressible groups of 100 KiB: about 4 MB, which must split
	// into transactions of at most 1.4 MiB, each accepted by etcd (whose
	// limit is 1.5 MiB).
	var commits []journal.Commit
	for i := range 40 {
		cm, err := leader.Append(set(fmt.Sprint("g", i), string(incompressible(100<<10, uint64(i)))))
		if err != nil {
			t.Fatal(err)
		}
		commits = append(commits, cm)
	}
	pos := waitAll(t, commits)
	eventually(t, 10*time.Second, "the watcher reaches the last commit", func() bool { return watcher.position() >= pos[len(pos)-1] })
	if v, _ := watcher.group("big"); !bytes.Equal([]byte(v), big) {
		t.Error("the large group did not come back intact")
	}
	if v, _ := watcher.group("g39"); !bytes.Equal([]byte(v), incompressible(100<<10, 39)) {
		t.Error("g39 did not come back intact")
	}
	// A group no transaction can carry fails at Append, naming the limit.
	_, err := leader.Append(set("huge", string(incompressible(1500<<10, 2))))
	if !errors.Is(err, etcdlog.ErrTooLarge) || !bytes.Contains([]byte(err.Error()), []byte("bytes an etcd transaction may carry")) {
		t.Errorf("Append of a 1.5 MiB group: %v; want ErrTooLarge naming the limit", err)
	}
	if !leader.IsLeader() {
		t.Error("a group refused at Append ended the term")
	}
}

func TestAWipeDeletesEveryGroupInOneTransaction(t *testing.T) {
	c := startCluster(t, 1, nil)
	prefix := newPrefix()
	leader := openLog(t, c.endpoints, prefix, nil)
	follow(t, leader)
	watcher := follow(t, openLog(t, c.endpoints, prefix, nil))
	campaign(t, leader)
	for i := range 5 {
		mustCommit(t, leader, set(fmt.Sprint("g", i), "v"))
	}
	wipe := mustCommit(t, leader, journal.Op{Kind: journal.OpDeleteAll})
	after := mustCommit(t, leader, set("new", "v"))
	eventually(t, 10*time.Second, "the watcher reaches the last commit", func() bool { return watcher.position() >= after })
	for _, b := range watcher.allBatches() {
		if b.Position == wipe && len(b.Ops) != 5 {
			t.Errorf("the wipe's batch holds %d ops, want 5 deletes", len(b.Ops))
		}
	}
	for i := range 5 {
		if _, ok := watcher.group(fmt.Sprint("g", i)); ok {
			t.Errorf("g%d survived the wipe", i)
		}
	}
	if _, ok := watcher.group("new"); !ok {
		t.Error("the group pushed after the wipe is missing")
	}
}

func TestAFullEtcdFailsTheCommitWithErrNoSpace(t *testing.T) {
	c := startCluster(t, 1, func(cfg *embed.Config) { cfg.QuotaBackendBytes = 4 << 20 })
	l := openLog(t, c.endpoints, newPrefix(), nil)
	follow(t, l)
	campaign(t, l)
	var err error
	for i := range 40 {
		var cm journal.Commit
		if cm, err = l.Append(set(fmt.Sprint("g", i), string(incompressible(1<<20, uint64(i))))); err != nil {
			break
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = cm.Wait(ctx)
		cancel()
		if err != nil {
			break
		}
	}
	if !errors.Is(err, etcdlog.ErrNoSpace) {
		t.Fatalf("writing 40 MiB into a 4 MiB quota: %v; want ErrNoSpace", err)
	}
	if l.IsLeader() || !errors.Is(l.TermErr(), etcdlog.ErrNoSpace) {
		t.Errorf("after NOSPACE: leading %v, term error %v", l.IsLeader(), l.TermErr())
	}
	_, err = l.Append(set("g", "v"))
	if !errors.Is(err, etcdlog.ErrNotLeader) || !errors.Is(err, etcdlog.ErrNoSpace) {
		t.Errorf("Append after NOSPACE: %v; want ErrNotLeader and ErrNoSpace", err)
	}
	if st := l.Stats(); st.NoSpace != 1 || st.Failed != 1 {
		t.Errorf("Stats: NoSpace %d, Failed %d; want 1, 1", st.NoSpace, st.Failed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.Campaign(ctx); !errors.Is(err, etcdlog.ErrNoSpace) {
		t.Errorf("Campaign with NOSPACE raised: %v; want ErrNoSpace", err)
	}
}
