package store

import (
	"fmt"

	"github.com/pushgate/pushgate/exposition"
)

// What a scrape reads of a family: the bodies the push rendered and the
// scrapes cached, and the ways to the others. Package scrape writes them.

// Plain reports whether every name in the family is a legacy name
// (exposition.LegacyNames): its bodies then do not depend on the scrape's
// escaping scheme, so they are cached (PushedText, TextBody) and a protobuf
// scrape writes its stored bytes as they are (ProtobufBody).
func (f *Family) Plain() bool { return f.plain }

// PushedText returns the s2 block of the text body the push rendered (in
// the encoding last scraped, DESIGN §6), its uncompressed size and its
// encoding; packed is nil when there is none (a family that is not plain,
// restored from the journal, or that cannot be rendered in that encoding).
// The block must not be modified.
func (f *Family) PushedText() (packed []byte, size int, enc exposition.Encoding) {
	p := f.pushed
	return p.packed, int(p.size), exposition.Encoding(p.enc)
}

// CachedText returns the text body a scrape cached (TextBody), or nil.
func (f *Family) CachedText() *TextBody { return f.text.Load() }

// ProtobufCached returns the family's protobuf bytes as an earlier
// protobuf scrape cached them (ProtobufBody), and whether there are any.
// The bytes must not be modified.
func (f *Family) ProtobufCached() ([]byte, bool) {
	if b := f.unpacked.Load(); b != nil {
		return *b, true
	}
	return nil, false
}

// ProtobufLen returns the length of the family's protobuf bytes (repeated
// field 4 of MetricFamily), without decompressing them.
func (f *Family) ProtobufLen() (int, error) { return f.metricsLen() }

// ProtobufBody returns the family's protobuf bytes for a protobuf scrape
// and keeps them for the next one, until DropProtobufBody. The bytes must
// not be modified.
func (f *Family) ProtobufBody() ([]byte, error) {
	if b := f.unpacked.Load(); b != nil {
		return *b, nil
	}
	b, err := f.metrics()
	if err != nil {
		return nil, err
	}
	f.unpacked.Store(&b)
	return b, nil
}

// DropProtobufBody forgets the protobuf bytes ProtobufBody kept, so that a
// gateway no longer scraped by protobuf holds only the compressed ones.
func (f *Family) DropProtobufBody() {
	if f.unpacked.Load() != nil {
		f.unpacked.Store(nil)
	}
}

// Render returns the family's body in fm, rendered from its protobuf
// bytes: the way to a body the caches do not hold (a family that is not
// plain, whose body depends on the scrape's escaping scheme).
func (f *Family) Render(fm exposition.Format) ([]byte, error) {
	mf, err := f.Decode()
	if err != nil {
		return nil, err
	}
	b, err := exposition.AppendBody(nil, mf, fm)
	if err != nil {
		return nil, fmt.Errorf("render family %q: %w", f.Name(), err)
	}
	return b, nil
}
