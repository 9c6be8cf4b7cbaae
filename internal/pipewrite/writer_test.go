package pipewrite

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

// recordingWriter keeps what is written to it and the size of each write,
// and fails every write once failAfter bytes have been written (if set).
type recordingWriter struct {
	buf       bytes.Buffer
	writes    []int
	failAfter int
}

var errWriteRefused = errors.New("connection reset by test")

func (w *recordingWriter) Write(p []byte) (int, error) {
	if w.failAfter > 0 && w.buf.Len()+len(p) > w.failAfter {
		return 0, errWriteRefused
	}
	w.writes = append(w.writes, len(p))
	return w.buf.Write(p)
}

func TestAWriterWritesCopiesAndHandedBuffersInOrder(t *testing.T) {
	for _, total := range []int{0, 100, BufferSize - 1, BufferSize, 10*BufferSize + 17} {
		t.Run(fmt.Sprint(total), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(total), 1))
			var want []byte
			var w recordingWriter
			pool := NewPool(2)
			o := NewWriter(&w, pool)
			for len(want) < total {
				n := min(total-len(want), rng.IntN(3*BufferSize/2)+1)
				chunk := make([]byte, n)
				for i := range chunk {
					chunk[i] = byte('a' + rng.IntN(4))
				}
				want = append(want, chunk...)
				if n > BufferSize || rng.IntN(2) == 0 {
					if _, err := o.Write(chunk); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := o.WriteBuffer(append(pool.Get(), chunk...)); err != nil {
					t.Fatal(err)
				}
			}
			if err := o.Close(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(w.buf.Bytes(), want) {
				t.Fatalf("wrote %d bytes that differ from the %d given", w.buf.Len(), len(want))
			}
			if o.Written() != int64(total) {
				t.Errorf("counted %d bytes, wrote %d", o.Written(), total)
			}
			if total > BufferSize && len(w.writes) < 2 {
				t.Errorf("%d bytes went out in %d writes; want one per filled buffer", total, len(w.writes))
			}
			for _, n := range w.writes {
				if n > BufferSize {
					t.Errorf("a write of %d bytes, larger than a buffer", n)
				}
			}
		})
	}
}

func TestAWriterStopsAtTheFirstFailedWrite(t *testing.T) {
	w := &recordingWriter{failAfter: 2*BufferSize + 5}
	o := NewWriter(w, NewPool(2))
	chunk := bytes.Repeat([]byte("x"), 4096)
	var err error
	for i := 0; i < 40*BufferSize/len(chunk) && err == nil; i++ {
		_, err = o.Write(chunk)
	}
	cerr := o.Close()
	if !errors.Is(err, errWriteRefused) && !errors.Is(cerr, errWriteRefused) {
		t.Fatalf("writes returned %v and close %v; want the writer's error", err, cerr)
	}
	if w.buf.Len() > w.failAfter {
		t.Errorf("%d bytes written past the failure at %d", w.buf.Len(), w.failAfter)
	}
}

// BenchmarkWriter writes 16 MiB through a Writer to io.Discard: copied in
// 1 KiB pieces (how a scrape writes headers and rendered bodies), or handed
// over in filled pool buffers (how it writes decoded text batches).
func BenchmarkWriter(b *testing.B) {
	const total = 16 << 20
	piece := bytes.Repeat([]byte("metric_a{job=\"x\"} 1\n"), 1024/21)
	pool := NewPool(9)
	b.Run("copied", func(b *testing.B) {
		b.SetBytes(total)
		b.ReportAllocs()
		for b.Loop() {
			o := NewWriter(io.Discard, pool)
			for n := 0; n < total; n += len(piece) {
				if _, err := o.Write(piece); err != nil {
					b.Fatal(err)
				}
			}
			if err := o.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("handed", func(b *testing.B) {
		b.SetBytes(total)
		b.ReportAllocs()
		for b.Loop() {
			o := NewWriter(io.Discard, pool)
			for n := 0; n < total; n += BufferSize {
				buf := pool.Get()
				if err := o.WriteBuffer(buf[:BufferSize]); err != nil {
					b.Fatal(err)
				}
			}
			if err := o.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
