package scrape

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/store"
)

// TestAScrapeRendersWhatPushesLeftUnrenderedToTheSameBytes: a push into a
// gateway scraped only with protobuf renders no text body
// (render.State.RenderText), and a text scrape that then renders them from
// the protobuf bytes writes, in every format and gzipped, exactly what it
// writes when the push rendered them.
func TestAScrapeRendersWhatPushesLeftUnrenderedToTheSameBytes(t *testing.T) {
	// More than prerenderMin, so that a prerenderer renders beside the scrape.
	const groups = 3 * prerenderMin
	for _, c := range []struct {
		name string
		f    exposition.Format
		gz   bool
	}{
		{"text", exposition.NewFormat(exposition.EncodingText), false},
		{"openmetrics", exposition.NewFormat(exposition.EncodingOpenMetrics), false},
		{"protobuf", exposition.NewFormat(exposition.EncodingProtobuf), false},
		{"gzip", exposition.NewFormat(exposition.EncodingText), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			scrapeOf := func(s *testStore) []byte {
				t.Helper()
				var buf bytes.Buffer
				sn := s.Snapshot()
				defer sn.Release()
				var err error
				if c.gz {
					_, err = sn.writeGzip(&buf, c.f, nil)
				} else {
					_, err = sn.write(&buf, c.f, nil)
				}
				if err != nil {
					t.Fatal(err)
				}
				if !c.gz {
					return buf.Bytes()
				}
				return gunzip(t, buf.Bytes())
			}
			rendered, deferred := newStore(store.Options{}), newStore(store.Options{})
			for _, s := range []*testStore{rendered, deferred} {
				pushPayload(t, s, groups, 1, t0)
			}
			// Between the pushes, rendered is scraped in text (or the
			// format's text encoding) and deferred only with protobuf, so
			// only rendered's second push renders text bodies.
			between := c.f
			if between.Encoding() == exposition.EncodingProtobuf {
				between = exposition.NewFormat(exposition.EncodingText)
			}
			for s, f := range map[*testStore]exposition.Format{rendered: between, deferred: exposition.NewFormat(exposition.EncodingProtobuf)} {
				sn := s.Snapshot()
				if _, err := sn.write(io.Discard, f, nil); err != nil {
					t.Fatal(err)
				}
				sn.Release()
			}
			for _, s := range []*testStore{rendered, deferred} {
				pushPayload(t, s, groups, 2, t0.Add(time.Second))
			}
			pushedBodies := func(s *testStore) int {
				n := 0
				for _, g := range s.Groups() {
					for _, f := range g.Families() {
						if packed, _, _ := f.Cache().Pushed(); packed != nil {
							n++
						}
					}
				}
				return n
			}
			if r, d := pushedBodies(rendered), pushedBodies(deferred); r == 0 || d >= r {
				t.Fatalf("pushed bodies: %d after a scrape, %d without one; want the second push to render only after the scrape", r, d)
			}
			want, got := scrapeOf(rendered), scrapeOf(deferred)
			if !bytes.Equal(got, want) {
				t.Errorf("the scrape of bodies rendered at scrape time differs from that of bodies rendered at push:\n%.600s\nwant\n%.600s", got, want)
			}
			if c.f.Encoding() != exposition.EncodingProtobuf && len(want) < 1000 {
				t.Errorf("the scrape is %d bytes, want the payload of %d groups", len(want), groups)
			}
		})
	}
}
