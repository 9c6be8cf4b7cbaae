package gzipcat

import (
	"bytes"
	"compress/flate"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// TestRunChunksInOrder writes random pieces through runChunks and checks
// that the output inflates to exactly the input, in order.
func TestRunChunksInOrder(t *testing.T) {
	from := &Compressors{}
	rng := rand.New(rand.NewPCG(3, 4))
	// Pieces are cut at random offsets from one random source: filling
	// every piece byte by byte took 35 s under -race, and pieces from
	// different offsets still differ, so a piece out of order shows.
	src := make([]byte, 3*chunkSize)
	for i := range src {
		src[i] = byte('a' + rng.IntN(8))
	}
	for round := 0; round < 3; round++ {
		var out, in bytes.Buffer
		c := runChunks{w: &out, from: from}
		for k := 0; k < 16; k++ {
			n := rng.IntN(3 * chunkSize / 2)
			off := rng.IntN(len(src) - n + 1)
			p := src[off : off+n]
			in.Write(p)
			if err := c.write(p); err != nil {
				t.Fatal(err)
			}
			if rng.IntN(4) == 0 {
				if err := c.flush(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := c.flush(); err != nil {
			t.Fatal(err)
		}
		c.release()
		got, err := io.ReadAll(flate.NewReader(io.MultiReader(&out, bytes.NewReader([]byte{0x03, 0x00}))))
		if err != nil {
			t.Fatalf("round %d: inflate: %v", round, err)
		}
		if !bytes.Equal(got, in.Bytes()) {
			t.Fatalf("round %d: %d bytes inflated, %d written, or out of order", round, len(got), in.Len())
		}
	}
}

// failAfter fails every write after the first n.
type failAfter struct{ n int }

func (w *failAfter) Write(p []byte) (int, error) {
	if w.n == 0 {
		return 0, errors.New("connection reset")
	}
	w.n--
	return len(p), nil
}

// TestRunChunksWriteFailure checks that a failed write is returned, and
// that release then stops the helper without waiting forever.
func TestRunChunksWriteFailure(t *testing.T) {
	c := runChunks{w: &failAfter{n: 1}, from: &Compressors{}}
	p := bytes.Repeat([]byte("metric_a 1\n"), chunkSize/4)
	var err error
	for k := 0; k < 8 && err == nil; k++ {
		err = c.write(p)
	}
	if err == nil {
		err = c.flush()
	}
	if err == nil || err.Error() != "connection reset" {
		t.Fatalf("got %v, want the writer's error", err)
	}
	c.release()
}
