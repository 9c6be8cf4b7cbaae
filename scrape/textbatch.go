package scrape

import (
	"fmt"

	"github.com/klauspost/compress/s2"

	"github.com/pushgate/pushgate/internal/pipewrite"
)

// writeTextBatches writes parts, cached text bodies of at most
// pipewrite.BufferSize bytes each: it cuts them into batches that fit one
// output buffer, decodes each batch straight into a pool buffer and hands
// it to the writer, whose goroutine writes it while the next is decoded.
//
// A helper goroutine decoding every other batch was measured and removed:
// BenchmarkScrape text at 10,000 groups, 15 alternating runs on the shared
// 2-core machine (load 3–11), 36.2 ms ±18% with it, 35.5 ms ±22% without,
// and the same CPU per scrape (34.9 against 35.4 ms ±7%); 10 more runs
// with the machine otherwise idle (load under 2.5, the benchmark
// included), 28.8 ms ±13% with it, 26.9 ms ±23% without. Its own
// measurement (p50 32.8 against 29.4 ms in four runs) had overlapping
// ranges.
func (fw *familyWriter) writeTextBatches(parts []part) error {
	for len(parts) > 0 {
		batch, rest := cutBatch(parts)
		buf, err := fw.decodeBatch(batch, fw.wr.buffers.Get())
		if err != nil {
			fw.wr.buffers.Put(buf)
			return err
		}
		if err := fw.out.WriteBuffer(buf); err != nil {
			return err
		}
		parts = rest
	}
	return nil
}

// cutBatch returns the longest prefix of parts whose bodies fit in one
// output buffer (at least one part), and the rest.
func cutBatch(parts []part) (batch, rest []part) {
	size, n := 0, 0
	for n < len(parts) && (n == 0 || size+parts[n].textSize <= pipewrite.BufferSize) {
		size += parts[n].textSize
		n++
	}
	return parts[:n], parts[n:]
}

// decodeBatch decodes the cached text bodies of parts into buf, which must
// have room for all of them, touching the blocks ahead of the one decoded.
func (fw *familyWriter) decodeBatch(parts []part, buf []byte) ([]byte, error) {
	for i, p := range parts {
		if i%touchAhead == 0 {
			fw.touchBlocks(parts[min(i+touchAhead, len(parts)):min(i+2*touchAhead, len(parts))])
		}
		start := len(buf)
		if start+p.textSize > cap(buf) {
			return buf, fmt.Errorf("cached bodies of %d bytes do not fit a batch of %d", start+p.textSize, cap(buf))
		}
		b, err := s2.Decode(buf[start:start+p.textSize], p.textPacked)
		if err != nil {
			return buf, fmt.Errorf("decompress cached body of %q: %w", p.fam.Name(), err)
		}
		if len(b) != p.textSize || (p.textSize > 0 && &b[0] != &buf[start : start+1][0]) {
			return buf, fmt.Errorf("cached body of %q decodes to %d bytes, expected %d", p.fam.Name(), len(b), p.textSize)
		}
		buf = buf[:start+p.textSize]
	}
	return buf, nil
}

// touchAhead is how many parts ahead of the one being decoded touchBlocks
// reads.
const touchAhead = 8

// touchBlocks reads the first byte of each part's s2 block, one
// independent load per part in a tight loop, so that the CPU fetches the
// blocks' first cache lines in parallel instead of stalling on each when
// its decoding starts (the s2 header read was 13% of a 10,000-group text
// scrape). Measured against a build without it, BenchmarkScrape text at
// 10,000 groups, 15 alternating runs: 32.5 against 37.1 ms of CPU per
// scrape (±5%, ±9%). The same touching ahead of the other parts a scrape
// writes (gzip segments, protobuf bodies) made gzip scrapes of cached
// segments slower (20.2 against 16.5 ms, ±5%, ±6%) and was removed.
func (fw *familyWriter) touchBlocks(parts []part) {
	var sum byte
	for i := range parts {
		if b := parts[i].textPacked; len(b) > 0 {
			sum += b[0]
		}
	}
	fw.touched += sum
}
