package exposition

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// storedOf returns mf as a store keeps it: its metrics as the protobuf
// bytes of MetricFamily field 4.
func storedOf(t testing.TB, mf *dto.MetricFamily) StoredFamily {
	t.Helper()
	metrics, err := proto.Marshal(&dto.MetricFamily{Metric: mf.Metric})
	if err != nil {
		t.Fatal(err)
	}
	return StoredFamily{Name: mf.GetName(), Help: mf.GetHelp(), Unit: mf.GetUnit(), Type: mf.GetType(), Metrics: metrics}
}

// unmarshalBody renders f the way a stored family was rendered before
// AppendStoredBody: decoded with proto.Unmarshal into new dto objects.
func unmarshalBody(f StoredFamily, fm Format) ([]byte, error) {
	mf, err := DecodeStored(f)
	if err != nil {
		return nil, err
	}
	return AppendBody(nil, mf, fm)
}

// checkStoredBody requires AppendStoredBody to render f in every format
// byte for byte as the proto.Unmarshal way does, and to fail where it does.
func checkStoredBody(t *testing.T, f StoredFamily) {
	t.Helper()
	for _, fm := range append(textFormats(), NewFormat(EncodingProtobuf)) {
		want, wantErr := unmarshalBody(f, fm)
		got, err := AppendStoredBody([]byte("prefix"), f, fm)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%s: error %v, want %v", fm.ContentType(), err, wantErr)
		}
		if err == nil && !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Fatalf("%s: body\n%q\nwant\n%q", fm.ContentType(), got, want)
		}
	}
}

// TestStoredBodiesRenderAsUnmarshaledOnes: the pooled decode a scrape
// renders stored families with gives the bodies the proto.Unmarshal decode
// gave, for the payload and for generated families of every type (native
// histograms and exemplars included, which take Unmarshal's way inside it),
// and a family whose bytes are not protobuf fails.
func TestStoredBodiesRenderAsUnmarshaledOnes(t *testing.T) {
	for _, mf := range batchJobFamilies() {
		checkStoredBody(t, storedOf(t, mf))
	}
	unit := storedOf(t, batchJobFamilies()[0])
	unit.Unit = "seconds"
	checkStoredBody(t, unit)
	rng := rand.New(rand.NewPCG(7, 11))
	data := make([]byte, 96)
	for i := range 3000 {
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		f := storedOf(t, buildFamily(data))
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkStoredBody(t, f) })
	}
	bad := StoredFamily{Name: "m", Type: dto.MetricType_GAUGE, Metrics: []byte{0x22, 0x05, 0x01}}
	if _, err := AppendStoredBody(nil, bad, NewFormat(EncodingText)); err == nil {
		t.Error("a family whose bytes are cut short rendered without an error")
	}
}

// BenchmarkAppendStoredBody renders the bench payload's 8 families from
// their stored protobuf bytes as text: decoded by the pooled reader
// (pooled), and with proto.Unmarshal into new dto objects (unmarshal), the
// way scrapes rendered a family without a pushed body before.
func BenchmarkAppendStoredBody(b *testing.B) {
	var stored []StoredFamily
	for _, mf := range batchJobFamilies() {
		stored = append(stored, storedOf(b, mf))
	}
	fm := NewFormat(EncodingText)
	b.Run("pooled", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = buf[:0]
			for _, f := range stored {
				var err error
				if buf, err = AppendStoredBody(buf, f, fm); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, f := range stored {
				if _, err := unmarshalBody(f, fm); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
