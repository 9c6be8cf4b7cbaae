package scrape

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/internal/gzipcat"
	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/store"
)

// gunzipScrape takes a gzip scrape of s in f and returns it decompressed by
// compress/gzip, checking that it is exactly one gzip member.
func gunzipScrape(t *testing.T, s *testStore, f exposition.Format, own ...*dto.MetricFamily) []byte {
	t.Helper()
	var z bytes.Buffer
	if _, err := s.Snapshot().writeGzip(&z, f, own); err != nil {
		t.Fatal(err)
	}
	return gunzip(t, z.Bytes())
}

// gunzip decompresses one gzip member with compress/gzip and fails on
// trailing bytes, a bad CRC-32 or a bad length.
func gunzip(t *testing.T, z []byte) []byte {
	t.Helper()
	r := bytes.NewReader(z)
	zr, err := gzip.NewReader(r)
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	zr.Multistream(false)
	body, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	if err := zr.Reset(r); err != io.EOF {
		t.Fatalf("want one gzip member and nothing after it, got %v", err)
	}
	return body
}

// requireTool returns the path of an external tool. Outside CI a missing
// tool skips the test loudly; with CI=true it fails it, so that CI never
// passes by skipping.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not installed — CI must install it", name)
		}
		t.Skipf("SKIPPED: %s not installed (CI=true makes this a failure)", name)
	}
	return path
}

// ownFamilies returns a few families standing in for the gateway's own
// metrics, one of them sharing a name with a pushed family.
func ownFamilies() []*dto.MetricFamily {
	return []*dto.MetricFamily{
		{Name: proto.String("go_goroutines"), Help: proto.String("Goroutines."), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(12)}}}},
		{Name: proto.String("zz_own_total"), Help: proto.String("Last."), Type: dto.MetricType_COUNTER.Enum(),
			Metric: []*dto.Metric{{Counter: &dto.Counter{Value: proto.Float64(3)}}}},
	}
}

func TestGzipScrapeDecodesLikeThePlainScrape(t *testing.T) {
	s := newStore(store.Options{})
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		k := groupkey.New(map[string]string{"job": "bench", "instance": fmt.Sprintf("i%d", i)})
		if _, err := s.Push(ctx, store.Push{Key: k, Method: store.Replace, Families: payload.Families(i, 0), Time: t0}); err != nil {
			t.Fatal(err)
		}
	}
	own := ownFamilies()
	for _, enc := range []exposition.Encoding{exposition.EncodingText, exposition.EncodingOpenMetrics} {
		f := exposition.NewFormat(enc)
		var plain, z bytes.Buffer
		if _, err := s.Snapshot().write(&plain, f, own); err != nil {
			t.Fatal(err)
		}
		// Twice: the first builds the segments, the second reuses them.
		for _, pass := range []string{"cold", "cached"} {
			z.Reset()
			if _, err := s.Snapshot().writeGzip(&z, f, own); err != nil {
				t.Fatal(err)
			}
			if got := gunzip(t, z.Bytes()); !bytes.Equal(got, plain.Bytes()) {
				t.Fatalf("%s %s: gzip scrape differs:\ngot  %.300q\nwant %.300q", enc, pass, got, plain.Bytes())
			}
		}
		file := filepath.Join(t.TempDir(), "scrape.gz")
		if err := os.WriteFile(file, z.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Run(enc.String()+"/gzip -dc", func(t *testing.T) {
			out, err := exec.Command(requireTool(t, "gzip"), "-dc", file).Output()
			if err != nil {
				t.Fatalf("gzip -dc: %v", err)
			}
			if !bytes.Equal(out, plain.Bytes()) {
				t.Fatalf("gzip -dc output differs:\ngot  %.300q\nwant %.300q", out, plain.Bytes())
			}
		})
		t.Run(enc.String()+"/python gzip", func(t *testing.T) {
			py := requireTool(t, "/usr/bin/python3")
			out, err := exec.Command(py, "-c", "import gzip, sys; sys.stdout.buffer.write(gzip.decompress(open(sys.argv[1], 'rb').read()))", file).Output()
			if err != nil {
				t.Fatalf("python3 gzip: %v", err)
			}
			if !bytes.Equal(out, plain.Bytes()) {
				t.Fatalf("python gzip output differs:\ngot  %.300q\nwant %.300q", out, plain.Bytes())
			}
		})
	}
}

func TestGzipScrapeOfAnEmptyStore(t *testing.T) {
	s := newStore(store.Options{})
	for _, own := range [][]*dto.MetricFamily{nil, ownFamilies()} {
		var plain bytes.Buffer
		f := exposition.NewFormat(exposition.EncodingOpenMetrics)
		if _, err := s.Snapshot().write(&plain, f, own); err != nil {
			t.Fatal(err)
		}
		if got := gunzipScrape(t, s, f, own...); !bytes.Equal(got, plain.Bytes()) {
			t.Fatalf("got %q, want %q", got, plain.Bytes())
		}
	}
}

func TestGzipScrapeRefusesProtobuf(t *testing.T) {
	s := newStore(store.Options{})
	if _, err := s.Snapshot().writeGzip(io.Discard, exposition.NewFormat(exposition.EncodingProtobuf), nil); err == nil {
		t.Fatal("protobuf gzip scrape from segments succeeded, want an error")
	}
}

// TestGzipScrapeMatchesThePlainScrapeUnderRandomChanges is a property test:
// random families (plain and UTF-8 named, every type, empty ones), random
// pushes, merges and deletes interleaved with scrapes in random encodings;
// every gzip scrape must decompress to the plain scrape of the same
// snapshot.
func TestGzipScrapeMatchesThePlainScrapeUnderRandomChanges(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			s := newStore(store.Options{UTF8Names: true})
			ctx := context.Background()
			own := ownFamilies()
			encs := []exposition.Format{
				exposition.NewFormat(exposition.EncodingText),
				exposition.NewFormat(exposition.EncodingOpenMetrics),
			}
			var sawUTF8, sawCached, sawMixed bool
			// Background precompression runs between some scrapes, with
			// budgets from one segment to everything.
			pre := newPrecompressor(s.w, func() *store.Store { return s.Store }, 1)
			for step := 0; step < 120; step++ {
				k := groupkey.New(map[string]string{"job": "prop", "instance": fmt.Sprintf("i%d", rng.IntN(6))})
				switch r := rng.IntN(10); {
				case r < 5:
					method := store.Replace
					if rng.IntN(2) == 0 {
						method = store.Merge
					}
					// Conflicts are fine: a rejected push only records a failure time.
					_, _ = s.Push(ctx, store.Push{Key: k, Method: method, Families: randomFamilies(rng, k), Time: t0.Add(timeStep(step))})
				case r < 6:
					_, _ = s.Delete(ctx, k)
				default:
					if rng.IntN(2) == 0 {
						pre.budget = []time.Duration{0, 50 * time.Microsecond, time.Hour}[rng.IntN(3)]
						pre.pass(t0.Add(timeStep(step) + time.Duration(rng.IntN(5))*time.Second))
					}
					f := encs[rng.IntN(len(encs))]
					// Mixed cached and streamed families, under budgets
					// from nothing to everything and runs that end at
					// every segment or absorb some.
					_, with, without := segmentState(s)
					sawMixed = sawMixed || with > 0 && without > 0
					plain := checkedGzipScrape(t, s, f, own, gzipLimits{
						budget:     []int{0, 200, 2000, 1 << 30}[rng.IntN(4)],
						calmBudget: []int{0, 2000, 1 << 30}[rng.IntN(3)],
						minRun:     []int{0, 0, 100, 1 << 30}[rng.IntN(4)],
					})
					sawUTF8 = sawUTF8 || bytes.Contains(plain, []byte("f.utf8"))
					sawCached = sawCached || bytes.Contains(plain, []byte("a_total{"))
				}
			}
			if !sawUTF8 || !sawCached || !sawMixed || pre.segments == 0 {
				t.Fatalf("no scrape held every kind of family (UTF-8 named %v, plain %v, with and without segments %v, precompressed %d): the test proves nothing", sawUTF8, sawCached, sawMixed, pre.segments)
			}
		})
	}
}

func timeStep(step int) time.Duration { return time.Duration(step) * time.Second }

// randomFamilies returns up to five families drawn from a fixed pool of
// names, each name with one type, so most pushes pass the consistency check.
func randomFamilies(rng *rand.Rand, k groupkey.Key) []*dto.MetricFamily {
	pool := []struct {
		name string
		typ  dto.MetricType
	}{
		{"a_total", dto.MetricType_COUNTER},
		{"b_gauge", dto.MetricType_GAUGE},
		{"c_seconds", dto.MetricType_HISTOGRAM},
		{"d_summary", dto.MetricType_SUMMARY},
		{"e_untyped", dto.MetricType_UNTYPED},
		{"f.utf8 ü", dto.MetricType_GAUGE},
	}
	values := []string{"", "x", "a\"b", "back\\slash", "new\nline", "ü€", "with space"}
	var out []*dto.MetricFamily
	for _, p := range pool {
		if rng.IntN(2) == 0 {
			continue
		}
		mf := &dto.MetricFamily{Name: proto.String(p.name), Type: p.typ.Enum()}
		if rng.IntN(3) > 0 {
			mf.Help = proto.String("help " + values[rng.IntN(len(values))])
		}
		for i, n := 0, rng.IntN(4); i < n; i++ {
			m := &dto.Metric{Label: []*dto.LabelPair{{Name: proto.String("l"), Value: proto.String(fmt.Sprintf("%s%d", values[rng.IntN(len(values))], i))}}}
			if p.name == "f.utf8 ü" {
				m.Label = append(m.Label, &dto.LabelPair{Name: proto.String("dotted.label"), Value: proto.String("v")})
			}
			v := rng.NormFloat64() * 1e3
			switch p.typ {
			case dto.MetricType_COUNTER:
				m.Counter = &dto.Counter{Value: proto.Float64(abs(v))}
			case dto.MetricType_GAUGE:
				m.Gauge = &dto.Gauge{Value: proto.Float64(v)}
			case dto.MetricType_UNTYPED:
				m.Untyped = &dto.Untyped{Value: proto.Float64(v)}
			case dto.MetricType_HISTOGRAM:
				m.Histogram = &dto.Histogram{SampleCount: proto.Uint64(3), SampleSum: proto.Float64(abs(v)),
					Bucket: []*dto.Bucket{{UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(1)}, {UpperBound: proto.Float64(10), CumulativeCount: proto.Uint64(3)}}}
			case dto.MetricType_SUMMARY:
				m.Summary = &dto.Summary{SampleCount: proto.Uint64(2), SampleSum: proto.Float64(abs(v)),
					Quantile: []*dto.Quantile{{Quantile: proto.Float64(0.5), Value: proto.Float64(v)}}}
			}
			mf.Metric = append(mf.Metric, m)
		}
		out = append(out, mf)
	}
	return out
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// cacheBytes returns the bytes the store's text caches hold and the number
// of families holding one.
func cacheBytes(s *testStore) (bytes, families int) {
	for _, g := range s.Groups() {
		for _, f := range g.Families() {
			pushed, _, _ := f.Cache().Pushed()
			held := pushed != nil
			bytes += len(pushed)
			if tb := f.Cache().CachedText(); tb != nil {
				if !storetest.SameBlock(tb.Packed(), pushed) {
					bytes += len(tb.Packed())
				}
				bytes += len(tb.Segment().Deflate)
				held = true
			}
			if held {
				families++
			}
		}
	}
	return bytes, families
}

// textView is what a scrape finds of a family's text body.
type textView struct {
	size    int
	packed  []byte
	deflate []byte
	seen    bool
}

// textOf returns the text body a scrape finds for f: its cached TextBody,
// else the body its push rendered; nil if it has neither.
func textOf(f *store.Family) *textView {
	if tb := f.Cache().CachedText(); tb != nil {
		return &textView{size: tb.Size(), packed: tb.Packed(), deflate: tb.Segment().Deflate, seen: tb.GzipSeen()}
	}
	packed, size, _ := f.Cache().Pushed()
	if packed == nil {
		return nil
	}
	return &textView{size: size, packed: packed}
}

// segmentState returns the text bytes of the store's families that have a
// deflate segment, and the number of families with and without one.
func segmentState(s *testStore) (segmentText, with, without int) {
	for _, g := range s.Groups() {
		for _, f := range g.Families() {
			tb := textOf(f)
			switch {
			case tb == nil:
			case tb.deflate != nil:
				segmentText += tb.size
				with++
			default:
				without++
			}
		}
	}
	return segmentText, with, without
}

// defaultLimits are the limits WriteGzip applies.
func defaultLimits() gzipLimits {
	return gzipLimits{budget: segmentBudget, calmBudget: calmBudget, minRun: gzipcat.MinRun}
}

func TestRepeatedScrapesDoNotGrowTheCaches(t *testing.T) {
	s := newStore(store.Options{})
	ctx := context.Background()
	push := func(i, seq int) {
		t.Helper()
		k := groupkey.New(map[string]string{"job": "bench", "instance": fmt.Sprintf("i%d", i)})
		if _, err := s.Push(ctx, store.Push{Key: k, Method: store.Replace, Families: payload.Families(i, seq), Time: t0}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 10; i++ {
		push(i, 0)
	}
	pushed, fams := cacheBytes(s)
	if pushed == 0 || fams != 10*10 {
		t.Fatalf("after the pushes: %d bytes in %d families, want 100 families rendered by their pushes", pushed, fams)
	}
	text := exposition.NewFormat(exposition.EncodingText)
	scrape := func() {
		t.Helper()
		if _, err := s.Snapshot().write(io.Discard, text, nil); err != nil {
			t.Fatal(err)
		}
		limits := defaultLimits()
		limits.minRun = 0
		if _, err := s.w.writeGzip(io.Discard, s.Store.Snapshot(), text, nil, limits); err != nil {
			t.Fatal(err)
		}
	}
	scrape()
	if n, _ := cacheBytes(s); n != pushed {
		t.Fatalf("the first scrapes changed the caches from %d to %d bytes; the first gzip scrape only marks bodies as seen", pushed, n)
	}
	scrape()
	first, fams := cacheBytes(s)
	if _, with, _ := segmentState(s); first <= pushed || fams != 100 || with != 100 {
		t.Fatalf("after the second gzip scrape: %d bytes in %d families, %d with segments; want 100 families with segments", first, fams, with)
	}
	for i := 0; i < 5; i++ {
		scrape()
		if n, _ := cacheBytes(s); n != first {
			t.Fatalf("scrape %d: caches hold %d bytes, second scrape %d", i+3, n, first)
		}
	}
	// A push replaces group 0's families: the new ones hold their text but
	// no segment, and the old ones, with their caches, are no longer in the
	// store. Only push_failure_time_seconds, unchanged, is kept with its
	// segment.
	push(0, 1)
	for _, f := range s.Group(groupkey.New(map[string]string{"job": "bench", "instance": "i0"})).Families() {
		tb := textOf(f)
		if tb == nil {
			t.Fatalf("family %q of a new push has no text body", f.Name())
		}
		if f.Name() != store.PushFailureTimeName && (tb.deflate != nil || tb.seen) {
			t.Fatalf("family %q of a new push already has a segment or was seen by a gzip scrape", f.Name())
		}
	}
	if n, fams := cacheBytes(s); fams != 100 || n >= first {
		t.Fatalf("after replacing a group: %d bytes in %d families, want 100 families and less than %d bytes", n, fams, first)
	}
}

// checkedGzipScrape takes a plain scrape and a gzip scrape in f of one
// snapshot under limits, fails unless the gzip one decodes to the plain one,
// and returns the plain one.
func checkedGzipScrape(t *testing.T, s *testStore, f exposition.Format, own []*dto.MetricFamily, limits gzipLimits) []byte {
	t.Helper()
	sn := s.Store.Snapshot()
	defer sn.Release()
	var plain, z bytes.Buffer
	if _, err := s.w.Write(&plain, sn, f, own); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.writeGzip(&z, sn, f, own, limits); err != nil {
		t.Fatal(err)
	}
	if got := gunzip(t, z.Bytes()); !bytes.Equal(got, plain.Bytes()) {
		t.Fatalf("%s gzip scrape differs:\ngot  %.400q\nwant %.400q", f, got, plain.Bytes())
	}
	return plain.Bytes()
}

// TestGzipScrapesBuildSegmentsWithinTheirBudget fills a store, then takes
// gzip scrapes with a small segment budget: the first builds no segment
// (nothing was seen before), each later one at most the budget's worth,
// every one decodes to the plain scrape, and the segments converge to all
// families.
func TestGzipScrapesBuildSegmentsWithinTheirBudget(t *testing.T) {
	s := newStore(store.Options{})
	pushPayload(t, s, 40, 0, t0)
	const budget = 20 << 10
	prev := 0
	for scrape := 1; ; scrape++ {
		if scrape > 40 {
			t.Fatalf("segments did not converge after 40 scrapes")
		}
		checkedGzipScrape(t, s, exposition.NewFormat(exposition.EncodingText), ownFamilies(), gzipLimits{budget: budget, calmBudget: budget, minRun: 0})
		text, with, without := segmentState(s)
		built := text - prev
		prev = text
		switch {
		case scrape == 1 && with != 0:
			t.Fatalf("the first gzip scrape built %d segments, want none", with)
		case built > budget:
			t.Fatalf("scrape %d built segments for %d bytes of text, budget %d", scrape, built, budget)
		case scrape > 1 && without > 0 && built < budget/2:
			t.Fatalf("scrape %d built segments for only %d bytes of text with %d families left", scrape, built, without)
		}
		if without == 0 {
			if scrape < 4 {
				t.Fatalf("all %d families had segments after %d scrapes: the budget bounded nothing", with, scrape)
			}
			return
		}
	}
}

// TestCalmGzipScrapesFillTheCacheAtOnce checks that the segment budget
// follows the churn: after a scrape that found everything new (a fill) the
// next builds only the churning budget's worth; after one that found
// nothing new, the calm budget applies and the cache fills in one scrape;
// and a wave of pushes brings the small budget back.
func TestCalmGzipScrapesFillTheCacheAtOnce(t *testing.T) {
	s := newStore(store.Options{})
	pushPayload(t, s, 40, 0, t0)
	const budget = 8 << 10
	prev := 0
	scrape := func() (built, without int) {
		t.Helper()
		checkedGzipScrape(t, s, exposition.NewFormat(exposition.EncodingText), ownFamilies(), gzipLimits{budget: budget, calmBudget: 1 << 30, minRun: 0})
		text, _, without := segmentState(s)
		built, prev = text-prev, text
		return built, without
	}
	if built, _ := scrape(); built != 0 {
		t.Fatalf("first scrape built %d bytes of segments, want 0", built)
	}
	if built, without := scrape(); built > budget || without == 0 {
		t.Fatalf("second scrape (after a fill) built %d bytes with %d families left; want at most %d and some left", built, without, budget)
	}
	if _, without := scrape(); without != 0 {
		t.Fatalf("third scrape (calm) left %d families without a segment", without)
	}
	// Every group changes: the next scrape finds all its text new, so the
	// one after it is back on the small budget.
	pushPayload(t, s, 40, 1, t0)
	prev = 0
	scrape()
	if built, without := scrape(); built > budget || without == 0 {
		t.Fatalf("scrape after a wave of pushes built %d bytes with %d families left; want at most %d and some left", built, without, budget)
	}
}

// TestGzipScrapeStreamsShortRunsOn checks that with a long minRun cached
// segments met while a run is short are streamed into it, and the result
// still decodes.
func TestGzipScrapeStreamsShortRunsOn(t *testing.T) {
	s := newStore(store.Options{})
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		k := groupkey.New(map[string]string{"job": "bench", "instance": fmt.Sprintf("i%d", i)})
		if _, err := s.Push(ctx, store.Push{Key: k, Method: store.Replace, Families: payload.Families(i, 0), Time: t0}); err != nil {
			t.Fatal(err)
		}
	}
	f := exposition.NewFormat(exposition.EncodingText)
	var plain bytes.Buffer
	if _, err := s.Snapshot().write(&plain, f, nil); err != nil {
		t.Fatal(err)
	}
	sizes := map[int]int{}
	for _, run := range []int{0, 0, 0, 1 << 30} {
		limits := defaultLimits()
		limits.minRun = run
		var z bytes.Buffer
		if _, err := s.w.writeGzip(&z, s.Store.Snapshot(), f, nil, limits); err != nil {
			t.Fatal(err)
		}
		if got := gunzip(t, z.Bytes()); !bytes.Equal(got, plain.Bytes()) {
			t.Fatalf("minRun %d: gzip scrape differs", run)
		}
		sizes[run] = z.Len()
	}
	// One stream compresses better than 200 segments with their own
	// Huffman tables: the long minRun did stream the cached families.
	if sizes[1<<30] >= sizes[0] {
		t.Fatalf("one long run: %d bytes, segments: %d bytes; want the run smaller", sizes[1<<30], sizes[0])
	}
}

// gzipChunk is the size of the chunks internal/gzipcat compresses a
// member's runs in.
const gzipChunk = 256 << 10

// TestGzipScrapeOfManyChunks streams a body of several chunks (the first
// gzip scrape after a fill), then one where segments cut the runs into
// pieces of every length, and checks both against the plain scrape.
func TestGzipScrapeOfManyChunks(t *testing.T) {
	s := filledStore(t, 240)
	f := exposition.NewFormat(exposition.EncodingText)
	var plain bytes.Buffer
	if _, err := s.Snapshot().write(&plain, f, ownFamilies()); err != nil {
		t.Fatal(err)
	}
	if plain.Len() < 5*gzipChunk {
		t.Fatalf("body of %d bytes, want at least five chunks", plain.Len())
	}
	for _, budget := range []int{0, plain.Len() / 3, 1 << 30} {
		sn := s.Store.Snapshot()
		limits := defaultLimits()
		limits.budget = budget
		var z bytes.Buffer
		if _, err := s.w.writeGzip(&z, sn, f, ownFamilies(), limits); err != nil {
			t.Fatal(err)
		}
		sn.Release()
		if got := gunzip(t, z.Bytes()); !bytes.Equal(got, plain.Bytes()) {
			t.Fatalf("budget %d: gzip scrape differs from the plain one (%d against %d bytes)", budget, len(got), plain.Len())
		}
		// Chunking must not cost compression: within 2% of one stream.
		if budget == 0 {
			var one bytes.Buffer
			zw, _ := flate.NewWriter(&one, flate.BestSpeed)
			_, _ = zw.Write(plain.Bytes())
			_ = zw.Close()
			if limit := one.Len() + one.Len()/50; z.Len() > limit {
				t.Errorf("streamed member of %d bytes, one flate stream takes %d", z.Len(), one.Len())
			}
		}
	}
}
