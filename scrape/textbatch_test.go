package scrape

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/internal/pipewrite"
	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/store"
)

// namedFamily returns a stored family named name, for the errors that name
// it.
func namedFamily(t *testing.T, name string) *store.Family {
	t.Helper()
	s := newStore(store.Options{})
	mustPush(t, s, storetest.Key("job", "j"), store.Replace, name+" 1\n", t0)
	return familyOf(t, s, storetest.Key("job", "j"), name)
}

func TestABatchRefusesABlockOfAnotherSize(t *testing.T) {
	fam := namedFamily(t, "sized")
	parts := []part{{kind: partText, fam: fam, textPacked: s2.Encode(nil, []byte("twelve bytes")), textSize: 11}}
	if _, err := (&familyWriter{}).decodeBatch(parts, pipewrite.NewPool(1).Get()); err == nil || !strings.Contains(err.Error(), "sized") {
		t.Fatalf("a block of 12 bytes cached as 11: err = %v, want one naming the family", err)
	}
}

// TestABodyLargerThanABufferIsScrapedWhole scrapes a family whose text
// body is larger than one output buffer, which is decoded apart from the
// batches.
func TestABodyLargerThanABufferIsScrapedWhole(t *testing.T) {
	s := newStore(store.Options{})
	var body strings.Builder
	pad := strings.Repeat("x", 100)
	const series = 4000
	for i := range series {
		fmt.Fprintf(&body, "big{i=\"%d\",pad=\"%s\"} %d\n", i, pad, i)
	}
	mustPush(t, s, storetest.Key("job", "j"), store.Replace, body.String(), t0)
	if _, size, _ := familyOf(t, s, storetest.Key("job", "j"), "big").Cache().Pushed(); size <= pipewrite.BufferSize {
		t.Fatalf("the body is %d bytes, not larger than a buffer (%d)", size, pipewrite.BufferSize)
	}
	text, fams := scrape(t, s)
	if got := len(fams["big"].GetMetric()); got != series {
		t.Fatalf("scraped %d series of big, want %d", got, series)
	}
	if v, ok := storetest.Value(fams, "big", map[string]string{"job": "j", "instance": "", "i": "3999", "pad": pad}); !ok || v != 3999 {
		t.Fatalf("the last series of big scraped as %v (found %v):\n%.300s", v, ok, text)
	}
}

// TestLargeTextScrapeMatchesTheProtobufScrape scrapes a store larger than
// several output buffers as text (cached s2 bodies decoded into the
// buffers) and as protobuf (stored bytes copied in), and requires the same
// families from both.
func TestLargeTextScrapeMatchesTheProtobufScrape(t *testing.T) {
	s := newStore(store.Options{})
	const groups = 200
	for g := range groups {
		mustPush(t, s, storetest.Key("job", "bench", "instance", fmt.Sprintf("i-%04d", g)), store.Replace, string(payload.Text(g, 1)), t0.Add(time.Duration(g)*time.Second))
	}
	decode := func(f exposition.Format) map[string]*dto.MetricFamily {
		t.Helper()
		var buf bytes.Buffer
		n, err := s.Snapshot().write(&buf, f, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n != int64(buf.Len()) {
			t.Errorf("%s scrape: counted %d bytes, wrote %d", f, n, buf.Len())
		}
		if f.Encoding() == exposition.EncodingText && buf.Len() < 3*pipewrite.BufferSize {
			t.Fatalf("text scrape of %d bytes fills fewer than three buffers", buf.Len())
		}
		out := map[string]*dto.MetricFamily{}
		dec := expfmt.NewDecoder(&buf, expfmt.Format(f.ContentType()))
		for {
			mf := &dto.MetricFamily{}
			if err := dec.Decode(mf); err != nil {
				break
			}
			out[mf.GetName()] = mf
		}
		return out
	}
	text := decode(exposition.NewFormat(exposition.EncodingText))
	pb := decode(exposition.NewFormat(exposition.EncodingProtobuf))
	if len(text) != payload.FamilyCount()+2 || len(pb) != len(text) {
		t.Fatalf("text scrape has %d families, protobuf %d; want %d", len(text), len(pb), payload.FamilyCount()+2)
	}
	for name, mf := range pb {
		if got := len(mf.GetMetric()); got < groups {
			t.Errorf("%s: %d metrics from %d groups", name, got, groups)
		}
		if !proto.Equal(mf, text[name]) {
			t.Errorf("%s differs between the text and the protobuf scrape", name)
		}
	}
}

// textParts returns n parts of cached text bodies of random sizes up to
// max, and the text they decode to.
func textParts(t *testing.T, rng *rand.Rand, n, max int) ([]part, []byte) {
	t.Helper()
	fam := namedFamily(t, "batch_test")
	var parts []part
	var want []byte
	for range n {
		body := bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, rng.IntN(max)+1)
		want = append(want, body...)
		parts = append(parts, part{kind: partText, fam: fam, textPacked: s2.Encode(nil, body), textSize: len(body)})
	}
	return parts, want
}

func TestTextBatchesDecodeInOrder(t *testing.T) {
	for _, n := range []int{1, 2, 3, 50, 400} {
		rng := rand.New(rand.NewPCG(uint64(n), 3))
		parts, want := textParts(t, rng, n, pipewrite.BufferSize/3)
		var w bytes.Buffer
		wr := &Writer{buffers: pipewrite.NewPool(4)}
		out := pipewrite.NewWriter(&w, wr.buffers)
		fw := &familyWriter{w: out, out: out, wr: wr}
		if err := fw.writeTextBatches(parts); err != nil {
			t.Fatal(err)
		}
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w.Bytes(), want) || out.Written() != int64(len(want)) {
			t.Fatalf("%d parts: wrote %d bytes (counted %d) that differ from the %d expected", n, w.Len(), out.Written(), len(want))
		}
	}
}

func TestABadBlockInAnyBatchStopsTheScrape(t *testing.T) {
	for _, bad := range []int{0, 1, 5} {
		rng := rand.New(rand.NewPCG(9, uint64(bad)))
		// Parts of a third of a buffer: batches of three, so part 0 is in
		// the first batch and part 5 in the second.
		parts, _ := textParts(t, rng, 12, pipewrite.BufferSize/3-1)
		parts[bad].textPacked = []byte{0xff, 0xff, 0xff}
		wr := &Writer{buffers: pipewrite.NewPool(4)}
		out := pipewrite.NewWriter(io.Discard, wr.buffers)
		fw := &familyWriter{w: out, out: out, wr: wr}
		err := fw.writeTextBatches(parts)
		out.Close()
		if err == nil || !strings.Contains(err.Error(), "batch_test") {
			t.Errorf("a corrupt block at part %d: err = %v, want one naming the family", bad, err)
		}
	}
}
