package store

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupcodec"
	"github.com/pushgate/pushgate/groupcodec/groupcodectest"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/journal"
)

// legacyRecord returns g's record as a store writing version 1 or 2 of
// groupcodec wrote it.
func legacyRecord(t *testing.T, version byte, g *Group) []byte {
	t.Helper()
	b, err := groupcodectest.Legacy(version, testRecord(t, g))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRecordsOfEarlierVersionsLoadLikeTheOriginal(t *testing.T) {
	src := New(Options{})
	for i := range 5 {
		k := groupkey.New(map[string]string{"job": "bench", "instance": fmt.Sprintf("i%d", i)})
		if _, err := src.Push(context.Background(), Push{Key: k, Method: Replace, Families: payload.Families(i, 0), Time: t0}); err != nil {
			t.Fatal(err)
		}
	}
	mustPush(t, src, storetest.Key("job", "h"), Replace, "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n", t0)
	for _, tc := range []struct {
		name    string
		version byte
		apply   bool
	}{
		{"a store restores version 1 records", 1, false},
		{"a store restores version 2 records", 2, false},
		{"a follower applies version 2 records", 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := New(Options{})
			var ops []journal.Op
			for _, g := range src.Groups() {
				value := legacyRecord(t, tc.version, g)
				if value[0] != tc.version {
					t.Fatalf("record version %d", value[0])
				}
				ops = append(ops, journal.Op{Kind: journal.OpSet, Key: g.Key().ID(), Value: value})
			}
			if tc.apply {
				if err := dst.Apply(1, ops); err != nil {
					t.Fatal(err)
				}
			} else {
				for _, op := range ops {
					if err := dst.Restore(op.Key, op.Value); err != nil {
						t.Fatal(err)
					}
				}
			}
			if n := len(dst.Groups()); n != len(src.Groups()) {
				t.Fatalf("%d groups loaded, want %d", n, len(src.Groups()))
			}
			for _, enc := range []exposition.Encoding{exposition.EncodingText, exposition.EncodingOpenMetrics, exposition.EncodingProtobuf} {
				if want, got := scrapeBytes(t, src, enc), scrapeBytes(t, dst, enc); !bytes.Equal(want, got) {
					t.Errorf("%s: the loaded store scrapes %d bytes unlike the original's %d", enc, len(got), len(want))
				}
			}
			// A record the loaded store writes is of a current version
			// (3, or 4 for a group with delta states), and holds the same
			// blocks.
			for _, g := range dst.Groups() {
				if v := testRecord(t, g)[0]; v < 3 || v > groupcodec.Version {
					t.Errorf("the loaded store writes version %d", v)
				}
				if !bytes.Equal(testRecord(t, g), testRecord(t, src.Group(g.Key()))) {
					t.Errorf("group %s: the loaded store's record differs from the original's", g.Key())
				}
			}
		})
	}
}

func TestAStoreWritesEachFamilysBlockAsItHoldsIt(t *testing.T) {
	s := New(Options{})
	mustPush(t, s, storetest.Key("job", "a"), Replace, "# HELP a Help.\n# TYPE a counter\na{l=\"v\"} 1\nb 2\n", t0)
	g := s.Group(storetest.Key("job", "a"))
	rec, err := groupcodec.Decode(testRecord(t, g))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Families) != 2 {
		t.Fatalf("%d families in the record, want 2", len(rec.Families))
	}
	for _, rf := range rec.Families {
		f := g.families.get(rf.Name)
		pb, _ := f.cache.Stored()
		if rf.Metrics != nil || !bytes.Equal(rf.Packed, pb) {
			t.Errorf("family %s: record holds packed %v metrics %v, the family %v", rf.Name, rf.Packed, rf.Metrics, pb)
		}
	}
}
