package store

import (
	"testing"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/render"
)

// snapshotBody renders sn in f the way a scrape merges it, for the tests of
// the state a snapshot shows (package scrape, which writes real scrapes,
// imports store): each name once in scrape order, with its first family's
// type and unit and the first HELP in group order, then every group's
// family rendered anew from its protobuf bytes; a name without samples is
// left out. It reads no render cache, and leaves out the OpenMetrics
// renaming of counters (package scrape's renamesCounter).
func snapshotBody(t *testing.T, sn *Snapshot, f exposition.Format) []byte {
	t.Helper()
	var (
		out []byte
		run []*Family
	)
	flush := func() {
		if len(run) == 0 {
			return
		}
		run0, help := run[0], ""
		for _, fam := range run {
			if h := fam.Help(); h != "" {
				help = h
				break
			}
		}
		var bodies []byte
		for _, fam := range run {
			body, err := render.Body(fam, f)
			if err != nil {
				t.Fatal(err)
			}
			bodies = append(bodies, body...)
		}
		run = run[:0]
		if len(bodies) == 0 {
			return // A scrape writes no header for a name without samples.
		}
		b := append(exposition.AppendHeader(nil, run0.Name(), help, run0.Type(), run0.Unit(), f), bodies...)
		if f.Encoding() == exposition.EncodingProtobuf {
			out = exposition.AppendFrameLength(out, len(b))
		}
		out = append(out, b...)
	}
	sn.Ascend(func(e Entry) bool {
		if len(run) > 0 && run[0].Name() != e.Name() {
			flush()
		}
		run = append(run, e.Family())
		return true
	})
	flush()
	return exposition.AppendTrailer(out, f)
}

// textScrape returns snapshotBody of sn as text and releases it.
func textScrape(t *testing.T, sn *Snapshot) string {
	t.Helper()
	defer sn.Release()
	return string(snapshotBody(t, sn, exposition.NewFormat(exposition.EncodingText)))
}
