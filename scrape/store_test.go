package scrape

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/store"
)

// testStore is a store and the Writer that scrapes it, as the web handler
// pairs them.
type testStore struct {
	*store.Store
	w *Writer
}

// newStore returns an empty store with a Writer of its own.
func newStore(opts store.Options) *testStore {
	return &testStore{Store: store.New(opts), w: NewWriter()}
}

// testSnapshot is a snapshot of a testStore, written by its Writer.
type testSnapshot struct {
	*store.Snapshot
	w *Writer
}

// Snapshot returns a snapshot of s to scrape.
func (s *testStore) Snapshot() *testSnapshot {
	return &testSnapshot{Snapshot: s.Store.Snapshot(), w: s.w}
}

// write is Writer.Write of sn.
func (sn *testSnapshot) write(w io.Writer, f exposition.Format, own []*dto.MetricFamily) (int64, error) {
	return sn.w.Write(w, sn.Snapshot, f, own)
}

// writeGzip is Writer.WriteGzip of sn.
func (sn *testSnapshot) writeGzip(w io.Writer, f exposition.Format, own []*dto.MetricFamily) (int64, error) {
	return sn.w.WriteGzip(w, sn.Snapshot, f, own)
}

var t0 = time.Unix(1_700_000_000, 500_000_000)

// mustPush pushes the text exposition text to the group k with method m.
func mustPush(t *testing.T, s *testStore, k groupkey.Key, m store.Method, text string, at time.Time) {
	t.Helper()
	if _, err := s.Push(context.Background(), store.Push{Key: k, Method: m, Families: storetest.Families(t, text), Time: at}); err != nil {
		t.Fatalf("push to %s: %v", k, err)
	}
}

// familyOf returns the family name of the group k.
func familyOf(t *testing.T, s *testStore, k groupkey.Key, name string) *store.Family {
	t.Helper()
	if g := s.Group(k); g != nil {
		for _, f := range g.Families() {
			if f.Name() == name {
				return f
			}
		}
	}
	t.Fatalf("no family %q in %s", name, k)
	return nil
}

// scrape renders the store as text and parses it back with expfmt.
func scrape(t *testing.T, s *testStore) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	var buf bytes.Buffer
	sn := s.Snapshot()
	defer sn.Release()
	if _, err := sn.write(&buf, exposition.NewFormat(exposition.EncodingText), nil); err != nil {
		t.Fatalf("scrape: %v", err)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	parsed, err := parser.TextToMetricFamilies(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("scrape does not parse: %v\n%s", err, buf.String())
	}
	return buf.String(), parsed
}

// filledStore returns a store holding n groups of the realistic batch-job
// payload (8 families, 74 samples each).
func filledStore(b testing.TB, n int) *testStore {
	b.Helper()
	s := newStore(store.Options{})
	pushPayload(b, s, n, 0, time.Now())
	return s
}

// pushPayload PUTs the bench payload with sequence number seq to groups
// i0 … i<n-1> of job bench, at the time at.
func pushPayload(b testing.TB, s *testStore, n, seq int, at time.Time) {
	b.Helper()
	ctx := context.Background()
	for i := range n {
		k := groupkey.New(map[string]string{"job": "bench", "instance": fmt.Sprintf("i%d", i)})
		if _, err := s.Push(ctx, store.Push{Key: k, Method: store.Replace, Families: payload.Families(i, seq), Time: at}); err != nil {
			b.Fatal(err)
		}
	}
}
