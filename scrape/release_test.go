package scrape

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/pushgate/pushgate/exposition"
)

func TestReleaserFreesAfterALargeDropAtMostOncePerInterval(t *testing.T) {
	freed := make(chan struct{}, 4)
	r := releaser{min: 100, every: time.Minute, free: func() { freed <- struct{}{} }}
	now := time.Unix(1_700_000_000, 0)
	steps := []struct {
		name string
		n    int
		at   time.Duration
		want bool
	}{
		{"a drop under the minimum", 99, 0, false},
		{"a drop of the minimum", 100, 0, true},
		{"a large drop within the interval", 1 << 30, 59 * time.Second, false},
		{"a large drop an interval later", 1 << 30, time.Minute, true},
		{"no drop", 0, 10 * time.Minute, false},
	}
	for _, st := range steps {
		if got := r.dropped(st.n, now.Add(st.at)); got != st.want {
			t.Fatalf("%s: released %v, want %v", st.name, got, st.want)
		}
		if st.want {
			select {
			case <-freed:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: the release did not run", st.name)
			}
		}
	}
	select {
	case <-freed:
		t.Fatal("a release ran that dropped did not report")
	default:
	}
}

// TestATextScrapeAfterProtobufOnesReleasesTheirBytes scrapes by protobuf,
// which keeps each family's decompressed bytes, then by text (plain and
// gzip), which drops them: the first scrape that drops them must start a
// release with the bytes they took, and a scrape that drops nothing none.
func TestATextScrapeAfterProtobufOnesReleasesTheirBytes(t *testing.T) {
	for _, gzip := range []bool{false, true} {
		s := filledStore(t, 20)
		freed := make(chan struct{}, 4)
		s.w.release = releaser{min: 1, every: time.Nanosecond, free: func() { freed <- struct{}{} }}
		if _, err := s.Snapshot().write(io.Discard, exposition.NewFormat(exposition.EncodingProtobuf), nil); err != nil {
			t.Fatal(err)
		}
		kept := 0
		for _, g := range s.Groups() {
			for _, f := range g.Families() {
				if b, ok := f.Cache().ProtobufCached(); ok {
					kept += len(b)
				}
			}
		}
		if kept == 0 {
			t.Fatal("the protobuf scrape kept no bytes: the test proves nothing")
		}
		select {
		case <-freed:
			t.Fatal("a protobuf scrape, which drops nothing, started a release")
		default:
		}
		text := exposition.NewFormat(exposition.EncodingText)
		scrapeText := func() {
			t.Helper()
			var buf bytes.Buffer
			var err error
			if gzip {
				_, err = s.Snapshot().writeGzip(&buf, text, nil)
			} else {
				_, err = s.Snapshot().write(&buf, text, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		scrapeText()
		select {
		case <-freed:
		case <-time.After(10 * time.Second):
			t.Fatalf("gzip=%v: the text scrape that dropped %d protobuf bytes started no release", gzip, kept)
		}
		scrapeText()
		select {
		case <-freed:
			t.Fatalf("gzip=%v: a text scrape that dropped nothing started a release", gzip)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
