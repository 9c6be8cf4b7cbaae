package store

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/internal/storetest"
)

// BenchmarkRestore measures loading n stored groups of the realistic
// payload into an empty store, the work a restart or a cluster resync does
// per group (issue 14's target: 10,000 groups in 1 s, 100,000 in 10 s).
func BenchmarkRestore(b *testing.B) {
	for _, n := range []int{10_000} {
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			src := filledStore(b, n)
			type record struct {
				key   string
				value []byte
			}
			var records []record
			for _, g := range src.Groups() {
				records = append(records, record{g.Key().ID(), testRecord(b, g)})
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s := New(Options{})
				for _, r := range records {
					if err := s.Restore(r.key, r.value); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// TestRestoredStoreScrapesLikeTheOriginal checks the fast restore path: a
// store rebuilt from its records serves the same bytes in every encoding
// as the store that wrote them, under both name rules.
func TestRestoredStoreScrapesLikeTheOriginal(t *testing.T) {
	for _, utf8Names := range []bool{false, true} {
		src := New(Options{UTF8Names: utf8Names})
		for i := 0; i < 20; i++ {
			k := groupkey.New(map[string]string{"job": "bench", "instance": fmt.Sprintf("i%d", i), "empty": ""})
			if _, err := src.Push(context.Background(), Push{Key: k, Method: Replace, Families: payload.Families(i, 0), Time: t0}); err != nil {
				t.Fatal(err)
			}
		}
		if err := push(t, src, storetest.Key("job", "failed"), Replace, "m 1 123\n", t0); err == nil {
			t.Fatal("a timestamped push was accepted")
		}
		dst := New(Options{UTF8Names: utf8Names})
		for _, g := range src.Groups() {
			if err := dst.Restore(g.Key().ID(), testRecord(t, g)); err != nil {
				t.Fatal(err)
			}
		}
		// The index is rebuilt too: the same series from a group whose key
		// differs only by the empty label is refused.
		twin := groupkey.New(map[string]string{"job": "bench", "instance": "i0"})
		if _, err := dst.Push(context.Background(), Push{Key: twin, Method: Replace, Families: payload.Families(0, 0), Time: t0}); err == nil {
			t.Errorf("utf8=%v: the restored store accepted series group i0 holds", utf8Names)
		}
		for _, enc := range []exposition.Encoding{exposition.EncodingText, exposition.EncodingOpenMetrics, exposition.EncodingProtobuf} {
			want, got := scrapeBytes(t, src, enc), scrapeBytes(t, dst, enc)
			if !bytes.Equal(want, got) {
				t.Errorf("utf8=%v %s: restored store scrapes %d bytes unlike the original's %d", utf8Names, enc, len(got), len(want))
			}
		}
	}
}

func scrapeBytes(t *testing.T, s *Store, enc exposition.Encoding) []byte {
	t.Helper()
	sn := s.Snapshot()
	defer sn.Release()
	return snapshotBody(t, sn, exposition.NewFormat(enc))
}
