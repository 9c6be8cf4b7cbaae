package etcdtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/journal/etcdlog"
	"github.com/pushgate/pushgate/scrape"
	"github.com/pushgate/pushgate/store"
)

// startReplica loads a fresh store from l and follows l into it until the
// test ends, the way a replica does: its own batches are marked applied,
// the others' applied.
func startReplica(t testing.TB, l *etcdlog.Log) *store.Store {
	t.Helper()
	s := store.New(store.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	pos, err := l.Load(ctx, s.Restore)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s.MarkApplied(pos)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := l.Follow(ctx, pos, func(b journal.Batch) error {
			if b.Own {
				s.MarkApplied(b.Position)
				return nil
			}
			return s.Apply(b.Position, b.Ops)
		})
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("follow: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return s
}

func scrapeText(t testing.TB, s *store.Store) []byte {
	t.Helper()
	var buf bytes.Buffer
	sn := s.Snapshot()
	defer sn.Release()
	if _, err := scrape.NewWriter().Write(&buf, sn, exposition.NewFormat(exposition.EncodingText), nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func groupKey(instance int) groupkey.Key {
	return groupkey.New(map[string]string{"job": payload.Job, "instance": fmt.Sprint("i", instance)})
}

func TestReplicasFollowingTheLeaderServeTheSameBytes(t *testing.T) {
	c := startCluster(t, 3, nil)
	prefix := newPrefix()
	la, lb := openLog(t, c.endpoints, prefix, nil), openLog(t, c.endpoints, prefix, nil)
	sa, sb := startReplica(t, la), startReplica(t, lb)
	campaign(t, la)
	sa.SetJournal(la)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	t0 := time.Unix(1_700_000_000, 0)
	// 40 pushes to 10 groups from 8 clients at once.
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < 40; i += 8 {
				_, err := sa.Push(ctx, store.Push{Key: groupKey(i % 10), Families: payload.Families(i%10, i), Time: t0.Add(time.Duration(i) * time.Second)})
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// A merge, a delete, and a push refused for a type clash, whose
	// failure time is a change like any other.
	gauge := &dto.MetricFamily{Name: proto.String("batch_records_processed_total"), Type: dto.MetricType_GAUGE.Enum(),
		Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(1)}}}}
	extra := &dto.MetricFamily{Name: proto.String("extra"), Type: dto.MetricType_GAUGE.Enum(),
		Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(2)}}}}
	if _, err := sa.Push(ctx, store.Push{Key: groupKey(1), Method: store.Merge, Families: []*dto.MetricFamily{extra}, Time: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Delete(ctx, groupKey(2)); err != nil {
		t.Fatal(err)
	}
	var rej *admission.Error
	if _, err := sa.Push(ctx, store.Push{Key: groupKey(50), Families: []*dto.MetricFamily{gauge}, Time: t0.Add(2 * time.Minute)}); !errors.As(err, &rej) || rej.Class != admission.Refused {
		t.Fatalf("a type clash: %v, want a refusal", err)
	}

	committed := la.Stats().Committed
	eventually(t, 10*time.Second, "the follower applies every commit", func() bool { return sb.Applied() >= committed })
	want := scrapeText(t, sa)
	if got := scrapeText(t, sb); !bytes.Equal(got, want) {
		t.Errorf("the follower serves\n%.2000s\nthe leader\n%.2000s", got, want)
	}
	if !bytes.Contains(want, []byte(`push_failure_time_seconds{instance="i50",job="bench"} 1.70000012e+09`)) {
		t.Error("the refused push's failure time is not served")
	}
	// A replica starting now loads the same state.
	if got := scrapeText(t, startReplica(t, openLog(t, c.endpoints, prefix, nil))); !bytes.Equal(got, want) {
		t.Errorf("a replica loading from etcd serves\n%.2000s\nthe leader\n%.2000s", got, want)
	}

	if _, err := sa.Wipe(ctx); err != nil {
		t.Fatal(err)
	}
	committed = la.Stats().Committed
	eventually(t, 10*time.Second, "the follower applies the wipe", func() bool { return sb.Applied() >= committed })
	if n := len(sb.Groups()); n != 0 {
		t.Errorf("%d groups on the follower after the wipe", n)
	}
	if n := sb.ApplyConflicts(); n != 0 {
		t.Errorf("the follower counted %d conflicts", n)
	}
}
