package store

import (
	"bytes"
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
)

// gunzipScrape takes a gzip scrape of s in f and returns it decompressed by
// compress/gzip, checking that it is exactly one gzip member.
func gunzipScrape(t *testing.T, s *Store, f exposition.Format, own ...*dto.MetricFamily) []byte {
	t.Helper()
	var z bytes.Buffer
	if _, err := s.Snapshot().WriteGzipTo(&z, f, own); err != nil {
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
	s := New(Options{})
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		k := NewGroupKey(map[string]string{"job": "bench", "instance": fmt.Sprintf("i%d", i)})
		if err := s.Push(ctx, Push{Key: k, Method: Replace, Families: payload.Families(i, 0), Time: t0}); err != nil {
			t.Fatal(err)
		}
	}
	own := ownFamilies()
	for _, enc := range []exposition.Encoding{exposition.EncodingText, exposition.EncodingOpenMetrics} {
		f := exposition.NewFormat(enc)
		var plain, z bytes.Buffer
		if _, err := s.Snapshot().WriteTo(&plain, f, own); err != nil {
			t.Fatal(err)
		}
		// Twice: the first builds the segments, the second reuses them.
		for _, pass := range []string{"cold", "cached"} {
			z.Reset()
			if _, err := s.Snapshot().WriteGzipTo(&z, f, own); err != nil {
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
	s := New(Options{})
	for _, own := range [][]*dto.MetricFamily{nil, ownFamilies()} {
		var plain bytes.Buffer
		f := exposition.NewFormat(exposition.EncodingOpenMetrics)
		if _, err := s.Snapshot().WriteTo(&plain, f, own); err != nil {
			t.Fatal(err)
		}
		if got := gunzipScrape(t, s, f, own...); !bytes.Equal(got, plain.Bytes()) {
			t.Fatalf("got %q, want %q", got, plain.Bytes())
		}
	}
}

func TestGzipScrapeRefusesProtobuf(t *testing.T) {
	s := New(Options{})
	if _, err := s.Snapshot().WriteGzipTo(io.Discard, exposition.NewFormat(exposition.EncodingProtobuf), nil); err == nil {
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
			s := New(Options{UTF8Names: true})
			ctx := context.Background()
			own := ownFamilies()
			encs := []exposition.Format{
				exposition.NewFormat(exposition.EncodingText),
				exposition.NewFormat(exposition.EncodingOpenMetrics),
			}
			var sawUTF8, sawCached bool
			for step := 0; step < 120; step++ {
				k := NewGroupKey(map[string]string{"job": "prop", "instance": fmt.Sprintf("i%d", rng.IntN(6))})
				switch r := rng.IntN(10); {
				case r < 5:
					method := Replace
					if rng.IntN(2) == 0 {
						method = Merge
					}
					// Conflicts are fine: a rejected push only records a failure time.
					_ = s.Push(ctx, Push{Key: k, Method: method, Families: randomFamilies(rng, k), Time: t0.Add(timeStep(step))})
				case r < 6:
					_ = s.Delete(ctx, k)
				default:
					f := encs[rng.IntN(len(encs))]
					sn := s.Snapshot()
					var plain, z bytes.Buffer
					if _, err := sn.WriteTo(&plain, f, own); err != nil {
						t.Fatal(err)
					}
					if _, err := sn.WriteGzipTo(&z, f, own); err != nil {
						t.Fatal(err)
					}
					if got := gunzip(t, z.Bytes()); !bytes.Equal(got, plain.Bytes()) {
						t.Fatalf("step %d %s: gzip scrape differs:\ngot  %.400q\nwant %.400q", step, f, got, plain.Bytes())
					}
					sawUTF8 = sawUTF8 || bytes.Contains(plain.Bytes(), []byte("f.utf8"))
					sawCached = sawCached || bytes.Contains(plain.Bytes(), []byte("a_total{"))
				}
			}
			if !sawUTF8 || !sawCached {
				t.Fatalf("no scrape held both kinds of family (UTF-8 named %v, plain %v): the test proves nothing", sawUTF8, sawCached)
			}
		})
	}
}

func timeStep(step int) time.Duration { return time.Duration(step) * time.Second }

// randomFamilies returns up to five families drawn from a fixed pool of
// names, each name with one type, so most pushes pass the consistency check.
func randomFamilies(rng *rand.Rand, k GroupKey) []*dto.MetricFamily {
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
func cacheBytes(s *Store) (bytes, families int) {
	for _, g := range s.Groups() {
		for _, f := range g.Families() {
			if tb := f.text.Load(); tb != nil {
				bytes += len(tb.packed) + len(tb.deflate)
				families++
			}
		}
	}
	return bytes, families
}

func TestRepeatedScrapesDoNotGrowTheCaches(t *testing.T) {
	s := New(Options{})
	ctx := context.Background()
	push := func(i, seq int) {
		t.Helper()
		k := NewGroupKey(map[string]string{"job": "bench", "instance": fmt.Sprintf("i%d", i)})
		if err := s.Push(ctx, Push{Key: k, Method: Replace, Families: payload.Families(i, seq), Time: t0}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 10; i++ {
		push(i, 0)
	}
	if n, _ := cacheBytes(s); n != 0 {
		t.Fatalf("pushes cached %d bytes of text, want none", n)
	}
	text := exposition.NewFormat(exposition.EncodingText)
	scrape := func() {
		t.Helper()
		if _, err := s.Snapshot().WriteTo(io.Discard, text, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Snapshot().WriteGzipTo(io.Discard, text, nil); err != nil {
			t.Fatal(err)
		}
	}
	scrape()
	first, fams := cacheBytes(s)
	if first == 0 || fams != 10*10 {
		t.Fatalf("after a scrape: %d bytes in %d families, want 100 families cached", first, fams)
	}
	for i := 0; i < 5; i++ {
		scrape()
		if n, _ := cacheBytes(s); n != first {
			t.Fatalf("scrape %d: caches hold %d bytes, first scrape %d", i+2, n, first)
		}
	}
	// A push replaces group 0's families: the new ones start uncached and
	// the old ones, with their caches, are no longer in the store. Only
	// push_failure_time_seconds, unchanged, is kept with its cache.
	push(0, 1)
	for _, f := range s.Group(NewGroupKey(map[string]string{"job": "bench", "instance": "i0"})).Families() {
		if f.Name() != PushFailureTimeName && f.text.Load() != nil {
			t.Fatalf("family %q of a new push already has a text cache", f.Name())
		}
	}
	if n, fams := cacheBytes(s); fams != 100-9 || n >= first {
		t.Fatalf("after replacing a group: %d bytes in %d families, want 91 families and less than %d bytes", n, fams, first)
	}
}
