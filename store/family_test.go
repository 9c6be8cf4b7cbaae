package store

import (
	"context"
	"hash/maphash"
	"strings"
	"testing"
	"unsafe"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/limits"
)

// uncachedScrape renders the store in format f from freshly decoded
// families, through a fresh store built from its group map, bypassing its
// slots and every cache.
func uncachedScrape(t *testing.T, s *Store, f exposition.Format) []byte {
	t.Helper()
	fresh := New(Options{})
	for _, g := range s.Groups() {
		var fams []*dto.MetricFamily
		for _, fam := range g.Families() {
			if fam.Name() == PushTimeName || fam.Name() == PushFailureTimeName {
				continue
			}
			mf, err := fam.Decode()
			if err != nil {
				t.Fatal(err)
			}
			fams = append(fams, mf)
		}
		if _, err := fresh.Push(context.Background(), Push{Key: g.Key(), Method: Replace, Families: fams, Time: g.PushTime()}); err != nil {
			t.Fatal(err)
		}
	}
	sn := fresh.Snapshot()
	defer sn.Release()
	return snapshotBody(t, sn, f)
}

func TestAStoredFamilyDecodesToWhatWasPushed(t *testing.T) {
	pushed := payload.Families(7, 3)
	want := make([]*dto.MetricFamily, len(pushed))
	for i, mf := range pushed {
		want[i] = proto.Clone(mf).(*dto.MetricFamily)
	}
	prepared, err := prepare(storetest.Key("job", "j"), pushed, false, limits.Limits{}, New(Options{}).seed, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, pf := range prepared {
		f, err := newFamily(pf, t0.UnixNano(), exposition.EncodingText, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.Decode()
		if err != nil {
			t.Fatal(err)
		}
		// prepare adds job and instance labels; compare with the
		// prepared family, and check the pushed values survived.
		if !proto.Equal(got, pf.MF) {
			t.Errorf("family %q changed:\ngot  %v\nwant %v", want[i].GetName(), got, pf.MF)
		}
		if len(got.Metric) != len(want[i].Metric) {
			t.Errorf("family %q has %d metrics, pushed %d", want[i].GetName(), len(got.Metric), len(want[i].Metric))
		}
	}
}

// TestPreparedPlainIsLegacyNames checks the shortcut prepare takes for
// plain: whatever the name rules and grouping key, it must say what
// exposition.LegacyNames says of the sanitized family.
func TestPreparedPlainIsLegacyNames(t *testing.T) {
	bodies := []string{
		"# TYPE a counter\na{x=\"1\"} 1\n",
		"{\"a.b\",\"c.d\"=\"1\"} 2\n",
		"{\"a\",\"c.d\"=\"1\"} 2\n",
		"{\"a.b\",c=\"1\"} 2\n",
	}
	keys := []map[string]string{
		{"job": "j"},
		{"job": "j", "instance": "i", "zone": "z"},
		{"job": "j", "dotted.name": "v"},
	}
	for _, utf8Names := range []bool{false, true} {
		for _, body := range bodies {
			for _, km := range keys {
				decoded, err := exposition.Decode(strings.NewReader(body), "", exposition.DecodeOptions{UTF8Names: true})
				if err != nil {
					t.Fatalf("decode %q: %v", body, err)
				}
				prepared, err := prepare(groupkey.New(km), decoded.Families, utf8Names, limits.Limits{}, maphash.MakeSeed(), nil)
				if err != nil {
					continue // Refused under the legacy rules: nothing to render.
				}
				for _, pf := range prepared {
					if want := exposition.LegacyNames(pf.MF); pf.Plain != want {
						t.Errorf("utf8Names=%v body %q key %v: plain %v, LegacyNames %v", utf8Names, body, km, pf.Plain, want)
					}
				}
			}
		}
	}
}

// TestAFamilyFitsThe96ByteSizeClass guards the family's size: at 10,000
// groups of the bench payload there are 100,000 of them, and each size
// class above costs 16 bytes a family (1.6 MB).
func TestAFamilyFitsThe96ByteSizeClass(t *testing.T) {
	if size := unsafe.Sizeof(Family{}); size > 96 {
		t.Fatalf("a Family takes %d bytes, more than the 96-byte size class", size)
	}
}
