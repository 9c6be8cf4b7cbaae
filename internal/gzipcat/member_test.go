package gzipcat

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

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

// piece is one body given to a member: as a segment or written into a run.
type piece struct {
	body    []byte
	segment bool
}

// writeMember writes pieces as one member and returns it.
func writeMember(t *testing.T, pieces []piece, minRun int) []byte {
	t.Helper()
	var z bytes.Buffer
	from := &Compressors{}
	m, err := NewMember(&z, from, minRun)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	seg := Segmenter{From: from}
	defer seg.Release()
	for _, p := range pieces {
		if !p.segment {
			if _, err := m.Write(p.body); err != nil {
				t.Fatal(err)
			}
			continue
		}
		s, err := seg.Segment(p.body)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.WriteSegment(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	return z.Bytes()
}

func TestAMemberDecodesToItsSegmentsAndRunsInOrder(t *testing.T) {
	text := func(n int, seed uint64) []byte {
		rng := rand.New(rand.NewPCG(seed, 7))
		b := make([]byte, n)
		for i := range b {
			b[i] = "metric_a{job=\"x\"} 1\n"[rng.IntN(20)]
		}
		return b
	}
	cases := []struct {
		name   string
		pieces []piece
	}{
		{"an empty member is an empty body", nil},
		{"a member of one run is that run", []piece{{body: text(1000, 1)}}},
		{"a member of one segment is that segment", []piece{{body: text(1000, 2), segment: true}}},
		{"an empty segment adds nothing", []piece{{body: text(10, 3)}, {body: nil, segment: true}, {body: text(10, 4)}}},
		{"segments between runs keep their places", []piece{
			{body: text(300, 5)}, {body: text(700, 6), segment: true}, {body: text(5, 7)},
			{body: text(900, 8), segment: true}, {body: text(900, 9), segment: true}, {body: text(1, 10)},
		}},
		{"runs longer than a chunk keep their order", []piece{
			{body: text(3*chunkSize+17, 11)}, {body: text(500, 12), segment: true}, {body: text(chunkSize, 13)},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var want []byte
			for _, p := range c.pieces {
				want = append(want, p.body...)
			}
			if got := gunzip(t, writeMember(t, c.pieces, MinRun)); !bytes.Equal(got, want) {
				t.Fatalf("member decodes to %d bytes that differ from the %d given", len(got), len(want))
			}
		})
	}
}

func TestAMemberAbsorbsSegmentsOnlyWhileItsRunIsShort(t *testing.T) {
	m, err := NewMember(io.Discard, &Compressors{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	if m.Absorbs() {
		t.Error("a member with no open run absorbs")
	}
	m.Write(make([]byte, 99))
	if !m.Absorbs() {
		t.Error("a run of 99 bytes, under a minimum of 100, does not absorb")
	}
	m.Write(make([]byte, 1))
	if m.Absorbs() {
		t.Error("a run of 100 bytes still absorbs")
	}
	if err := m.WriteSegment(Segment{}); err != nil {
		t.Fatal(err)
	}
	if m.Absorbs() {
		t.Error("a segment did not end the run")
	}
}

// failingWriter fails every write.
type failingWriter struct{}

var errRefused = errors.New("connection reset")

func (failingWriter) Write([]byte) (int, error) { return 0, errRefused }

func TestAMemberReportsTheWritersError(t *testing.T) {
	if _, err := NewMember(failingWriter{}, &Compressors{}, MinRun); !errors.Is(err, errRefused) {
		t.Errorf("header write: got %v, want the writer's error", err)
	}
	m, err := NewMember(&failAfter{n: 1}, &Compressors{}, MinRun)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	m.Write([]byte("a run"))
	if err := m.WriteSegment(Segment{Deflate: []byte{0, 0, 0, 0xff, 0xff}}); err == nil {
		t.Error("a segment written after the writer failed returned no error")
	}
}

// BenchmarkMember writes the bench payload's family bodies (64 groups) as
// one member: all written into runs (what a gzip scrape does before any
// family has a segment) or all as segments built beforehand (a scrape of
// unchanged families). Bytes per second count the uncompressed body.
func BenchmarkMember(b *testing.B) {
	bodies := familyBodies(b)
	total := 0
	for _, body := range bodies {
		total += len(body)
	}
	from := &Compressors{}
	seg := Segmenter{From: from}
	defer seg.Release()
	segments := make([]Segment, len(bodies))
	for i, body := range bodies {
		var err error
		if segments[i], err = seg.Segment(body); err != nil {
			b.Fatal(err)
		}
	}
	for _, segmented := range []bool{false, true} {
		b.Run(fmt.Sprintf("segments=%v", segmented), func(b *testing.B) {
			b.SetBytes(int64(total))
			b.ReportAllocs()
			for b.Loop() {
				m, err := NewMember(io.Discard, from, 0)
				if err != nil {
					b.Fatal(err)
				}
				for i, body := range bodies {
					if segmented {
						err = m.WriteSegment(segments[i])
					} else {
						_, err = m.Write(body)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				if err := m.Close(); err != nil {
					b.Fatal(err)
				}
				m.Release()
			}
		})
	}
}
