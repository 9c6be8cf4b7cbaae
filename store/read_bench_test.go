package store

import "testing"

// BenchmarkReadRepushed measures what a read of every family's protobuf
// bytes costs (render.Cache.Metrics: what a protobuf scrape and a text body
// rendered from the bytes start with) in a store of 10,000 groups of the
// bench payload each pushed twice as text, the second push from its
// template: the store keeps such families as skeletons and value areas,
// so a read decompresses the skeleton and writes the values in.
func BenchmarkReadRepushed(b *testing.B) {
	s := textFilledStore(b, 10_000, true)
	var fams []*Family
	for _, g := range s.Groups() {
		fams = append(fams, g.Families()...)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, f := range fams {
			if _, err := f.cache.Metrics(f); err != nil {
				b.Fatal(err)
			}
		}
	}
}
