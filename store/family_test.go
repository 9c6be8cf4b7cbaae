package store

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"io"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/limits"
)

// TestScrapesAreTheSameWhicheverEncodingIsHot scrapes a store in a sequence
// of encodings, plain and gzip-compressed, so that the render cache switches
// between text, OpenMetrics and protobuf bodies with pushes in between, and
// checks every scrape against the same store rendered from decoded families
// with no cache at all.
func TestScrapesAreTheSameWhicheverEncodingIsHot(t *testing.T) {
	s := New(Options{})
	ctx := context.Background()
	pushGroup := func(i, seq int) {
		t.Helper()
		k := NewGroupKey(map[string]string{"job": "bench", "instance": fmt.Sprintf("i%d", i)})
		if err := s.Push(ctx, Push{Key: k, Method: Replace, Families: payload.Families(i, seq), Time: t0}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 5; i++ {
		pushGroup(i, 0)
	}
	encs := []exposition.Encoding{
		exposition.EncodingProtobuf, exposition.EncodingText, exposition.EncodingProtobuf,
		exposition.EncodingOpenMetrics, exposition.EncodingText, exposition.EncodingProtobuf,
	}
	for step, enc := range encs {
		t.Run(fmt.Sprintf("%d %s", step, enc), func(t *testing.T) {
			f := exposition.NewFormat(enc)
			var got bytes.Buffer
			if _, err := s.Snapshot().WriteTo(&got, f, nil); err != nil {
				t.Fatal(err)
			}
			want := uncachedScrape(t, s, f)
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("scrape differs from an uncached render:\ngot  %.300q\nwant %.300q", got.Bytes(), want)
			}
			if enc == exposition.EncodingProtobuf {
				return
			}
			if gzipped := gunzipScrape(t, s, f); !bytes.Equal(gzipped, want) {
				t.Fatalf("gzip scrape differs from an uncached render:\ngot  %.300q\nwant %.300q", gzipped, want)
			}
		})
		// A push after the scrape replaces a family whose body is cached.
		pushGroup(step%5, step+1)
	}
}

// uncachedScrape renders the store in format f from freshly decoded
// families, bypassing every cache.
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
		if err := fresh.Push(context.Background(), Push{Key: g.Key(), Method: Replace, Families: fams, Time: g.PushTime()}); err != nil {
			t.Fatal(err)
		}
	}
	// The fresh store has never been scraped, so every body is rendered
	// from the dto.
	var out bytes.Buffer
	if _, err := fresh.Snapshot().WriteTo(&out, f, nil); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestAStoredFamilyDecodesToWhatWasPushed(t *testing.T) {
	pushed := payload.Families(7, 3)
	want := make([]*dto.MetricFamily, len(pushed))
	for i, mf := range pushed {
		want[i] = proto.Clone(mf).(*dto.MetricFamily)
	}
	prepared, err := prepare(key("job", "j"), pushed, false, limits.Limits{}, New(Options{}).seed)
	if err != nil {
		t.Fatal(err)
	}
	for i, pf := range prepared {
		f, err := newFamily(pf, t0, exposition.EncodingText, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.Decode()
		if err != nil {
			t.Fatal(err)
		}
		// prepare adds job and instance labels; compare with the
		// prepared family, and check the pushed values survived.
		if !proto.Equal(got, pf.mf) {
			t.Errorf("family %q changed:\ngot  %v\nwant %v", want[i].GetName(), got, pf.mf)
		}
		if len(got.Metric) != len(want[i].Metric) {
			t.Errorf("family %q has %d metrics, pushed %d", want[i].GetName(), len(got.Metric), len(want[i].Metric))
		}
	}
}

func TestTextAndProtobufBodiesAreCachedApart(t *testing.T) {
	s := New(Options{})
	k := key("job", "j")
	push := func(seq int) {
		t.Helper()
		if err := s.Push(context.Background(), Push{Key: k, Method: Replace, Families: payload.Families(1, seq), Time: t0}); err != nil {
			t.Fatal(err)
		}
	}
	cached := func(enc exposition.Encoding) int {
		n := 0
		for _, f := range s.Group(k).Families() {
			if r := textOf(f); r != nil && r.enc == enc {
				n++
			}
		}
		return n
	}
	push(1)
	all := len(s.Group(k).Families())
	if n := cached(exposition.EncodingText); n != all {
		t.Fatalf("a push into a never scraped store rendered %d text bodies, want %d: pushes render text 0.0.4 by default", n, all)
	}
	if _, err := s.Snapshot().WriteTo(io.Discard, exposition.NewFormat(exposition.EncodingProtobuf), nil); err != nil {
		t.Fatal(err)
	}
	if after := cached(exposition.EncodingText); after != all {
		t.Errorf("text bodies cached after a protobuf scrape = %d, want %d", after, all)
	}
	unpacked := func() int {
		n := 0
		for _, f := range s.Group(k).Families() {
			if f.unpacked.Load() != nil {
				n++
			}
		}
		return n
	}
	if n := unpacked(); n != all {
		t.Errorf("protobuf bodies kept after a protobuf scrape = %d, want %d", n, all)
	}
	// A protobuf scrape does not change what pushes render.
	push(2)
	if n := cached(exposition.EncodingText); n != all {
		t.Errorf("a push after a protobuf scrape rendered %d text bodies, want %d", n, all)
	}
	// A text scrape drops the protobuf bodies: a gateway scraped only as
	// text holds only the compressed bytes.
	if _, err := s.Snapshot().WriteTo(io.Discard, exposition.NewFormat(exposition.EncodingProtobuf), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot().WriteTo(io.Discard, exposition.NewFormat(exposition.EncodingText), nil); err != nil {
		t.Fatal(err)
	}
	if n := unpacked(); n != 0 {
		t.Errorf("protobuf bodies kept after a text scrape = %d, want 0", n)
	}
	// An OpenMetrics scrape re-renders, and pushes after it render
	// OpenMetrics.
	if _, err := s.Snapshot().WriteTo(io.Discard, exposition.NewFormat(exposition.EncodingOpenMetrics), nil); err != nil {
		t.Fatal(err)
	}
	push(3)
	if n := cached(exposition.EncodingOpenMetrics); n != all {
		t.Errorf("a push after an OpenMetrics scrape rendered %d OpenMetrics bodies, want %d", n, all)
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
				prepared, err := prepare(NewGroupKey(km), decoded.Families, utf8Names, limits.Limits{}, maphash.MakeSeed())
				if err != nil {
					continue // Refused under the legacy rules: nothing to render.
				}
				for _, pf := range prepared {
					if want := exposition.LegacyNames(pf.mf); pf.plain != want {
						t.Errorf("utf8Names=%v body %q key %v: plain %v, LegacyNames %v", utf8Names, body, km, pf.plain, want)
					}
				}
			}
		}
	}
}
