package render

import (
	"bytes"
	"errors"
	"testing"

	"github.com/klauspost/compress/s2"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/internal/gzipcat"
)

// testFamily is a stored family as rendering sees it: its dto and a
// cache, which holds the s2 block of its protobuf bytes.
type testFamily struct {
	mf    *dto.MetricFamily
	cache Cache
	// decodes counts the renders from the protobuf bytes: only they read
	// the family's HELP text through the Source.
	decodes int
}

func (f *testFamily) Name() string { return f.mf.GetName() }
func (f *testFamily) Help() string {
	f.decodes++
	return f.mf.GetHelp()
}
func (f *testFamily) Unit() string         { return f.mf.GetUnit() }
func (f *testFamily) Type() dto.MetricType { return f.mf.GetType() }
func (f *testFamily) Packed() []byte {
	pb, _ := f.cache.Stored()
	return pb
}
func (f *testFamily) Cache() *Cache { return &f.cache }

// newTestFamily fills a family's cache as a push after a scrape in enc does.
func newTestFamily(t *testing.T, plain bool, enc exposition.Encoding) *testFamily {
	t.Helper()
	mf := &dto.MetricFamily{Name: proto.String("m"), Help: proto.String("H."), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{
		Label: []*dto.LabelPair{{Name: proto.String("job"), Value: proto.String("j")}},
		Gauge: &dto.Gauge{Value: proto.Float64(1.5)},
	}}}
	pb, err := exposition.AppendBody(nil, mf, exposition.NewFormat(exposition.EncodingProtobuf))
	if err != nil {
		t.Fatal(err)
	}
	f := &testFamily{mf: mf}
	var buf []byte
	f.cache.Fill(mf, plain, enc, EncodeInto(&buf, pb), &Scratch{})
	if got, err := s2.Decode(nil, f.Packed()); err != nil || !bytes.Equal(got, pb) {
		t.Fatalf("Fill kept %q (%v), want the block of %q", got, err, pb)
	}
	return f
}

// body renders the test family in enc, as the cache should hold it.
func body(t *testing.T, f *testFamily, enc exposition.Encoding) []byte {
	t.Helper()
	b, err := exposition.AppendBody(nil, f.mf, exposition.NewFormat(enc))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFillRendersAPlainFamilyInTheEncodingLastScraped(t *testing.T) {
	for _, enc := range []exposition.Encoding{exposition.EncodingText, exposition.EncodingOpenMetrics} {
		f := newTestFamily(t, true, enc)
		packed, size, got := f.cache.Pushed()
		text, err := s2.Decode(nil, packed)
		if err != nil || got != enc || size != len(text) || !bytes.Equal(text, body(t, f, enc)) {
			t.Errorf("%s: pushed body %q in %s (size %d, %v), want the %s body", enc, text, got, size, err, enc)
		}
		if !f.cache.Plain() {
			t.Errorf("%s: a plain family's cache says it is not plain", enc)
		}
	}
}

func TestFillRendersNothingForProtobufOrAFamilyThatIsNotPlain(t *testing.T) {
	for name, f := range map[string]*testFamily{
		"after a protobuf scrape": newTestFamily(t, true, exposition.EncodingProtobuf),
		"not plain":               newTestFamily(t, false, exposition.EncodingText),
	} {
		if packed, _, _ := f.cache.Pushed(); packed != nil {
			t.Errorf("%s: a pushed body of %d bytes, want none", name, len(packed))
		}
	}
	if newTestFamily(t, false, exposition.EncodingText).cache.Plain() {
		t.Error("a family that is not plain has a cache that says it is")
	}
}

func TestTextTakesThePushedBodyAndRendersAnotherEncodingOnce(t *testing.T) {
	f := newTestFamily(t, true, exposition.EncodingText)
	var sc Scratch
	tb, err := f.cache.Text(f, exposition.EncodingText, &sc)
	if err != nil {
		t.Fatal(err)
	}
	pushed, _, _ := f.cache.Pushed()
	if &tb.Packed()[0] != &pushed[0] || f.decodes != 0 {
		t.Errorf("the text body is not the pushed one (%d decodes)", f.decodes)
	}
	for range 2 {
		tb, err = f.cache.Text(f, exposition.EncodingOpenMetrics, &sc)
		if err != nil {
			t.Fatal(err)
		}
	}
	text, err := s2.Decode(nil, tb.Packed())
	if err != nil || tb.Size() != len(text) || !bytes.Equal(text, body(t, f, exposition.EncodingOpenMetrics)) {
		t.Errorf("OpenMetrics body %q (%v), want the OpenMetrics rendering", text, err)
	}
	if f.decodes != 1 || f.cache.CachedText() != tb {
		t.Errorf("%d decodes for two OpenMetrics bodies, cached %p want %p; want one decode and the body cached", f.decodes, f.cache.CachedText(), tb)
	}
}

func TestCacheSegmentKeepsTheBodyAndMarksItSeen(t *testing.T) {
	f := newTestFamily(t, true, exposition.EncodingText)
	tb, err := f.cache.Text(f, exposition.EncodingText, &Scratch{})
	if err != nil {
		t.Fatal(err)
	}
	seg := gzipcat.Segment{Deflate: []byte{1}}
	next := f.cache.CacheSegment(tb, seg)
	if f.cache.CachedText() != next || next.Segment().Deflate == nil || !next.GzipSeen() || next.Size() != tb.Size() || !bytes.Equal(next.Packed(), tb.Packed()) {
		t.Errorf("after CacheSegment the cache holds %+v, want the body with its segment, seen", f.cache.CachedText())
	}
	// A body the cache moved on from is returned with its segment, not cached.
	stale := f.cache.CacheSegment(tb, seg)
	if f.cache.CachedText() != next || stale.Segment().Deflate == nil {
		t.Error("a segment of a body the cache no longer holds replaced the cached one")
	}
}

func TestProtobufKeepsTheBytesUntilDropped(t *testing.T) {
	f := newTestFamily(t, true, exposition.EncodingText)
	want, err := s2.Decode(nil, f.Packed())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.cache.ProtobufLen(f); err != nil || n != len(want) {
		t.Errorf("ProtobufLen = %d, %v; want %d", n, err, len(want))
	}
	if _, ok := f.cache.ProtobufCached(); ok {
		t.Fatal("protobuf bytes cached before a protobuf scrape")
	}
	b, err := f.cache.Protobuf(f)
	if err != nil || !bytes.Equal(b, want) {
		t.Fatalf("Protobuf = %q, %v; want %q", b, err, want)
	}
	if cached, ok := f.cache.ProtobufCached(); !ok || !bytes.Equal(cached, want) {
		t.Error("Protobuf did not keep the bytes")
	}
	f.cache.DropProtobuf()
	if _, ok := f.cache.ProtobufCached(); ok {
		t.Error("DropProtobuf kept the bytes")
	}
}

func TestACorruptBlockIsAnErrorNamingTheFamily(t *testing.T) {
	f := newTestFamily(t, true, exposition.EncodingProtobuf)
	f.cache.SetProtobuf([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	if _, err := f.cache.Metrics(f); err == nil || !bytes.Contains([]byte(err.Error()), []byte(`"m"`)) {
		t.Errorf("Metrics of a corrupt block: %v, want an error naming the family", err)
	}
}

func TestStartScrapeRecordsTheTextEncodingAndWhenToDropProtobufBytes(t *testing.T) {
	var st State
	steps := []struct {
		enc      exposition.Encoding
		wantDrop bool
		wantEnc  exposition.Encoding
	}{
		{exposition.EncodingOpenMetrics, false, exposition.EncodingOpenMetrics},
		{exposition.EncodingProtobuf, false, exposition.EncodingOpenMetrics},
		{exposition.EncodingText, true, exposition.EncodingText},
		{exposition.EncodingText, false, exposition.EncodingText},
	}
	for i, s := range steps {
		if drop := st.StartScrape(s.enc); drop != s.wantDrop || st.Encoding() != s.wantEnc {
			t.Errorf("step %d, a %s scrape: drop %v, encoding %s; want %v, %s", i, s.enc, drop, st.Encoding(), s.wantDrop, s.wantEnc)
		}
	}
}

func TestReportSkippedCountsTheFamiliesLeftOut(t *testing.T) {
	var st State
	st.ReportSkipped(exposition.NewFormat(exposition.EncodingText), 0, nil)
	st.ReportSkipped(exposition.NewFormat(exposition.EncodingOpenMetrics), 2, errors.New("x"))
	if got := st.Skipped(); got != 2 {
		t.Errorf("Skipped = %d, want 2", got)
	}
}

func TestHasTextSaysWhetherTextWouldRender(t *testing.T) {
	f := newTestFamily(t, true, exposition.EncodingText)
	if !f.cache.HasText(exposition.EncodingText) || f.cache.HasText(exposition.EncodingOpenMetrics) {
		t.Error("a family pushed after a text scrape: want a text body and no OpenMetrics one")
	}
	if _, err := f.cache.Text(f, exposition.EncodingOpenMetrics, &Scratch{}); err != nil {
		t.Fatal(err)
	}
	if !f.cache.HasText(exposition.EncodingOpenMetrics) {
		t.Error("after Text rendered OpenMetrics, HasText says there is none")
	}
	unrendered := newTestFamily(t, true, exposition.EncodingProtobuf)
	if unrendered.cache.HasText(exposition.EncodingText) {
		t.Error("a family the push rendered no body for has a text body")
	}
}

func TestTheProtobufBlockCannotGrowIntoThePushedBody(t *testing.T) {
	f := newTestFamily(t, true, exposition.EncodingText)
	pb, _ := f.cache.Stored()
	text := body(t, f, exposition.EncodingText)
	packed, size, _ := f.cache.Pushed()
	if cap(pb) != len(pb) {
		t.Fatalf("the protobuf block (len %d, cap %d) can grow into the pushed body", len(pb), cap(pb))
	}
	_ = append(pb, 0xff) // must not write into the pushed body
	if got, err := s2.Decode(nil, packed); err != nil || !bytes.Equal(got, text) || size != len(text) {
		t.Errorf("pushed body after an append to the protobuf block: %q (%v, size %d), want %q", got, err, size, text)
	}

	// A block set alone (a restored family) has no pushed body.
	restored := append([]byte(nil), pb...)
	f.cache.SetProtobuf(restored)
	if got, area := f.cache.Stored(); &got[0] != &restored[0] || len(got) != len(restored) || len(area) != 0 {
		t.Error("Stored does not return the block SetProtobuf gave")
	}
	if packed, size, _ := f.cache.Pushed(); packed != nil || size != 0 {
		t.Errorf("a pushed body of %d bytes (size %d) after SetProtobuf, want none", len(packed), size)
	}
	if f.cache.HasText(exposition.EncodingText) {
		t.Error("HasText after SetProtobuf, want no text body")
	}
	var zero Cache
	if pb, area := zero.Stored(); pb != nil || area != nil {
		t.Error("an empty cache has a protobuf block")
	}
	if packed, _, _ := zero.Pushed(); packed != nil {
		t.Error("an empty cache has a pushed body")
	}
}
