package gzipcat

import (
	"bytes"
	"fmt"
	"io"

	"github.com/klauspost/compress/flate"
)

// A member's runs are compressed in chunks of chunkSize bytes, each from a
// fresh compressor state and sync-flushed, so that each ends byte-aligned
// as a segment does and their concatenation is one DEFLATE stream. The
// chunks alternate between a helper goroutine and the writer's own: the
// writer fills the next chunk while the helper compresses the one before,
// compresses that one itself, and writes both in order. Compression was
// ~60% of the CPU of a gzip scrape that streams everything (the first
// after a fill, or one where most families changed), all of it on one
// core. Package scrape's BenchmarkScrape "gzip first" (10,000 groups, 78.7 MB
// streamed), three alternating runs: 124-130 ms on one core, 90-96 ms with
// the helper. Beside 8 pushers and a gzip scrape every second, the
// scrape's p50 went from 272/311 to 254/294 ms in two rounds: the pushers
// keep both cores busy, so the helper finds little idle time.
//
// A chunk cannot refer back into the one before it. DEFLATE looks back at
// most 32 KiB, so that costs well under 1% of the compressed size at this
// chunk size.
const chunkSize = 256 << 10

// chunkJob is one chunk handed to the helper; one is in flight at a time.
type chunkJob struct {
	in  []byte
	out bytes.Buffer
	err error
}

// runChunks compresses the runs of one gzip member into w.
type runChunks struct {
	w    io.Writer
	from *Compressors
	// zw compresses this goroutine's chunks into out; taken from from at
	// the first chunk compressed here.
	zw  *flate.Writer
	out bytes.Buffer
	// fill collects the bytes of the chunk being filled.
	fill []byte
	// jobs and done talk to the helper goroutine, started at the first
	// full chunk; inflight is the chunk it holds, spare a job to reuse.
	jobs     chan *chunkJob
	done     chan *chunkJob
	inflight *chunkJob
	spare    *chunkJob
}

// write adds p to the run, compressing every chunk it fills.
func (c *runChunks) write(p []byte) error {
	for len(p) > 0 {
		if c.fill == nil {
			c.fill = make([]byte, 0, chunkSize)
		}
		n := min(len(p), cap(c.fill)-len(c.fill))
		c.fill = append(c.fill, p[:n]...)
		p = p[n:]
		if len(c.fill) < cap(c.fill) {
			continue
		}
		if c.inflight != nil {
			if err := c.flush(); err != nil {
				return err
			}
			continue
		}
		if err := c.handOver(); err != nil {
			return err
		}
	}
	return nil
}

// handOver gives the full chunk to the helper, starting it if need be.
func (c *runChunks) handOver() error {
	if c.jobs == nil {
		zw, err := c.from.Get(io.Discard)
		if err != nil {
			return fmt.Errorf("start chunk compressor: %w", err)
		}
		c.jobs, c.done = make(chan *chunkJob), make(chan *chunkJob, 1)
		go compressChunks(zw, c.from, c.jobs, c.done)
	}
	job := c.spare
	if job == nil {
		job = &chunkJob{in: make([]byte, 0, chunkSize)}
	}
	c.spare = nil
	job.in, c.fill = c.fill, job.in[:0]
	c.inflight = job
	c.jobs <- job
	return nil
}

// compressChunks is the helper goroutine: it compresses each job's chunk
// with zw and hands the job back, and returns zw to from when jobs closes.
func compressChunks(zw *flate.Writer, from *Compressors, jobs <-chan *chunkJob, done chan<- *chunkJob) {
	defer from.Put(zw)
	for j := range jobs {
		j.err = compressChunk(zw, &j.out, j.in)
		done <- j
	}
}

// compressChunk compresses in into out (reset first) from a fresh state,
// ending byte-aligned without a final block.
func compressChunk(zw *flate.Writer, out *bytes.Buffer, in []byte) error {
	out.Reset()
	zw.Reset(out)
	if _, err := zw.Write(in); err != nil {
		return err
	}
	return zw.Flush()
}

// flush writes everything written so far: the chunk the helper holds, if
// any, then the partly or fully filled one, compressed here meanwhile.
func (c *runChunks) flush() error {
	var err error
	c.out.Reset()
	if len(c.fill) > 0 {
		if c.zw == nil {
			c.zw, err = c.from.Get(io.Discard)
		}
		if err == nil {
			err = compressChunk(c.zw, &c.out, c.fill)
		}
		c.fill = c.fill[:0]
	}
	if c.inflight != nil {
		job := <-c.done
		c.inflight, c.spare = nil, job
		if err == nil {
			err = job.err
		}
		if err == nil {
			_, err = c.w.Write(job.out.Bytes())
		}
	}
	if err == nil && c.out.Len() > 0 {
		_, err = c.w.Write(c.out.Bytes())
	}
	return err
}

// release waits for a chunk still in flight, stops the helper and returns
// the compressors.
func (c *runChunks) release() {
	if c.inflight != nil {
		<-c.done
		c.inflight = nil
	}
	if c.jobs != nil {
		close(c.jobs)
		c.jobs = nil
	}
	c.from.Put(c.zw)
	c.zw = nil
}
