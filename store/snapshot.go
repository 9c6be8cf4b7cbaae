package store

import (
	"io"
	"runtime"
	"sort"
	"sync/atomic"

	"github.com/google/btree"
	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/internal/gzipcat"
	"github.com/pushgate/pushgate/internal/pipewrite"
)

// Snapshot is a consistent, point-in-time view of the store for one scrape.
// Taking it costs O(1) under the store's lock (a copy-on-write clone of the
// scrape order), so pushes never wait behind a scrape.
type Snapshot struct {
	store   *Store
	entries *btree.BTreeG[entry]
	// gzip bounds the work of gzip scrapes; tests shrink it.
	gzip     gzipLimits
	released atomic.Bool
	cleanup  runtime.Cleanup
}

// Snapshot returns a view of the store as it is now. Release it when done:
// while a snapshot is open, pushes defer their slot updates (see
// Store.deferred), and a snapshot taken meanwhile has to move them into new
// slots.
func (s *Store) Snapshot() *Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Updates deferred for the open snapshots must show in this one.
	s.applyDeferred()
	s.snapshots++
	sn := &Snapshot{store: s, entries: s.entries.Clone(), gzip: gzipLimits{budget: segmentBudget, calmBudget: calmBudget, minRun: gzipcat.MinRun}}
	// A snapshot dropped without Release is released when collected.
	sn.cleanup = runtime.AddCleanup(sn, (*Store).releaseSnapshot, s)
	return sn
}

// Release ends the snapshot; it must not be used after. Releasing twice is
// harmless.
func (sn *Snapshot) Release() {
	if sn.released.Swap(true) {
		return
	}
	sn.cleanup.Stop()
	sn.store.releaseSnapshot()
}

// releaseSnapshot counts a snapshot closed.
func (s *Store) releaseSnapshot() {
	s.mu.Lock()
	s.snapshots--
	if s.snapshots == 0 {
		s.applyDeferred()
	}
	s.mu.Unlock()
}

// WriteTo streams the merged exposition in format f to w: own (the
// gateway's own metrics) and every stored family, merged by name, in name
// order, each name's samples contiguous under one HELP and TYPE. Within a name
// groups follow their grouping keys' order. HELP rule: a built-in family's
// HELP wins; otherwise the HELP of the first group (in grouping-key order)
// that has one, so the same store always scrapes the same way. A family
// that cannot be rendered in f is left out, logged and counted
// (Store.SkippedFamilies), so that the response stays whole and valid; an
// error means w failed (or stored bytes are corrupt), and the response is
// then cut short.
func (sn *Snapshot) WriteTo(w io.Writer, f exposition.Format, own []*dto.MetricFamily) (int64, error) {
	rs := &sn.store.render
	rs.scraped(f.Encoding())
	out := pipewrite.NewWriter(w, rs.buffers)
	fw := &familyWriter{sn: sn, w: out, out: out, f: f, rs: rs, gather: rs.gatherBuffers()}
	defer rs.putGatherBuffers(fw.gather)
	if f.Encoding() == exposition.EncodingProtobuf {
		rs.protobufCached.Store(true)
	} else {
		fw.dropProtobuf = rs.protobufCached.Swap(false)
	}
	err := sn.write(fw, own)
	fw.reportSkipped()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return out.Written(), err
}

// write merges own and the snapshot's families into fw.
func (sn *Snapshot) write(fw *familyWriter, own []*dto.MetricFamily) error {
	own = append([]*dto.MetricFamily(nil), own...)
	sort.Slice(own, func(i, j int) bool { return own[i].GetName() < own[j].GetName() })
	fw.own = own
	var (
		run     = fw.gather.run[:0]
		runName string
		err     error
	)
	defer func() { fw.gather.run = run }()
	flush := func() {
		if err != nil || len(run) == 0 {
			return
		}
		for len(own) > 0 && own[0].GetName() < runName {
			err = fw.writeOwn(own[0])
			own = own[1:]
			if err != nil {
				return
			}
		}
		var mine *dto.MetricFamily
		if len(own) > 0 && own[0].GetName() == runName {
			mine, own = own[0], own[1:]
		}
		err = fw.writeRun(runName, mine, run)
		run = run[:0]
	}
	sn.entries.Ascend(func(e entry) bool {
		if e.name != runName {
			flush()
			runName = e.name
		}
		run = append(run, e)
		return err == nil
	})
	flush()
	for _, mf := range own {
		if err != nil {
			break
		}
		err = fw.writeOwn(mf)
	}
	if err == nil {
		fw.buf = exposition.AppendTrailer(fw.buf[:0], fw.f)
		_, err = fw.w.Write(fw.buf)
	}
	return err
}
