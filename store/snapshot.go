package store

import (
	"bufio"
	"fmt"
	"io"
	"sort"

	"github.com/google/btree"
	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/exposition"
)

// Snapshot is a consistent, point-in-time view of the store for one scrape.
// Taking it costs O(1) under the store's lock (a copy-on-write clone of the
// scrape order), so pushes never wait behind a scrape.
type Snapshot struct {
	store   *Store
	entries *btree.BTreeG[entry]
	builtin map[string]string
}

// Snapshot returns a view of the store as it is now.
func (s *Store) Snapshot() *Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &Snapshot{store: s, entries: s.entries.Clone()}
}

// WriteTo streams the merged exposition in format f to w: own (the
// gateway's own metrics) and every stored family, merged by name, in name
// order, each name's samples contiguous under one HELP and TYPE. Within a name
// groups follow their grouping keys' order. HELP rule: a built-in family's
// HELP wins; otherwise the HELP of the first group (in grouping-key order)
// that has one, so the same store always scrapes the same way.
func (sn *Snapshot) WriteTo(w io.Writer, f exposition.Format, own []*dto.MetricFamily) (int64, error) {
	if enc := f.Encoding(); enc != exposition.EncodingProtobuf {
		sn.store.renderEnc.Store(int32(enc))
	}
	own = append([]*dto.MetricFamily(nil), own...)
	sort.Slice(own, func(i, j int) bool { return own[i].GetName() < own[j].GetName() })
	cw := &countingWriter{w: bufio.NewWriterSize(w, 64<<10)}
	ew := &familyWriter{w: cw, f: f}

	var (
		run     []*Family
		runName string
		err     error
	)
	flush := func() {
		if err != nil || len(run) == 0 {
			return
		}
		for len(own) > 0 && own[0].GetName() < runName {
			err = ew.writeOwn(own[0])
			own = own[1:]
			if err != nil {
				return
			}
		}
		var mine *dto.MetricFamily
		if len(own) > 0 && own[0].GetName() == runName {
			mine, own = own[0], own[1:]
		}
		err = ew.writeRun(runName, mine, run)
		run = run[:0]
	}
	sn.entries.Ascend(func(e entry) bool {
		if e.name != runName {
			flush()
			runName = e.name
		}
		run = append(run, e.fam)
		return err == nil
	})
	flush()
	for _, mf := range own {
		if err != nil {
			break
		}
		err = ew.writeOwn(mf)
	}
	if err == nil {
		ew.buf = exposition.AppendTrailer(ew.buf[:0], f)
		_, err = cw.Write(ew.buf)
	}
	if err == nil {
		err = cw.w.(*bufio.Writer).Flush()
	}
	return cw.n, err
}

// familyWriter writes merged families in one format.
type familyWriter struct {
	w     io.Writer
	f     exposition.Format
	buf   []byte
	parts []part
}

// part is one family's body in a merged family: bytes ready to write, or a
// stored family whose protobuf bytes are fetched (and if need be
// decompressed) while writing.
type part struct {
	body   []byte
	packed *Family
}

// writeOwn writes one of the gateway's own families, which no group shares.
func (fw *familyWriter) writeOwn(mf *dto.MetricFamily) error {
	return fw.writeRun(mf.GetName(), mf, nil)
}

// writeRun writes one merged family: the optional built-in family first,
// then every group's family of that name.
func (fw *familyWriter) writeRun(name string, own *dto.MetricFamily, run []*Family) error {
	var (
		help string
		typ  dto.MetricType
		unit string
	)
	switch {
	case own != nil:
		help, typ, unit = own.GetHelp(), own.GetType(), own.GetUnit()
	default:
		typ = run[0].typ
		for _, f := range run {
			if h := f.Help(); h != "" {
				help = h
				break
			}
		}
		unit = run[0].Unit()
	}
	fw.parts = fw.parts[:0]
	total := 0
	if own != nil && len(own.Metric) > 0 {
		b, err := exposition.AppendBody(nil, own, fw.f)
		if err != nil {
			return fmt.Errorf("render %q: %w", name, err)
		}
		fw.parts = append(fw.parts, part{body: b})
		total += len(b)
	}
	protobuf := fw.f.Encoding() == exposition.EncodingProtobuf
	for _, f := range run {
		if f.streamsProtobuf(fw.f) {
			// The frame length comes first: add up the lengths (from the s2
			// headers for bodies not cached yet) and decompress while
			// writing, one family at a time.
			n, err := f.metricsLen()
			if err != nil {
				return err
			}
			fw.parts = append(fw.parts, part{packed: f})
			total += n
			continue
		}
		if !protobuf {
			f.dropProtobufBody()
		}
		b, err := f.body(fw.f)
		if err != nil {
			return err
		}
		fw.parts = append(fw.parts, part{body: b})
		total += len(b)
	}
	if total == 0 {
		return nil
	}
	header := exposition.AppendHeader(fw.buf[:0], name, help, typ, unit, fw.f)
	if fw.f.Encoding() == exposition.EncodingProtobuf {
		frame := exposition.AppendFrameLength(nil, len(header)+total)
		if _, err := fw.w.Write(frame); err != nil {
			return err
		}
	}
	if _, err := fw.w.Write(header); err != nil {
		return err
	}
	fw.buf = header
	for _, p := range fw.parts {
		b := p.body
		if p.packed != nil {
			var err error
			if b, err = p.packed.protobufBody(); err != nil {
				return err
			}
		}
		if _, err := fw.w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
