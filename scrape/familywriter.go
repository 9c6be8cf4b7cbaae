package scrape

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/klauspost/compress/s2"
	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/internal/gzipcat"
	"github.com/pushgate/pushgate/internal/pipewrite"
	"github.com/pushgate/pushgate/render"
	"github.com/pushgate/pushgate/store"
)

// familyWriter writes merged families in one format.
type familyWriter struct {
	sn *store.Snapshot
	// own is every own family of the scrape, sorted by name.
	own []*dto.MetricFamily
	w   io.Writer
	// out is w when the scrape is not compressed: cached text bodies are
	// then decoded straight into its buffer.
	out *pipewrite.Writer
	// gz is w when the scrape is gzip-compressed: cached families are then
	// written as their deflate segments.
	gz     *gzipcat.Member
	wr     *Writer
	f      exposition.Format
	buf    []byte
	gather *gatherBuffers
	sc     scratch
	// preScratch is the prerenderer's (one at a time: writeRun waits for
	// it).
	preScratch render.Scratch
	// dropProtobuf is set for a text scrape after a protobuf one: the
	// families' decompressed protobuf bytes are dropped as it passes.
	dropProtobuf bool
	// dropped counts the protobuf bytes the scrape dropped (releaser).
	dropped int
	// touched keeps the touching loads from being optimised away.
	touched byte
	// skipped counts the families left out because they could not be
	// rendered in this scrape's format; skipErr is the first one's error.
	skipped int
	skipErr error
}

// skip leaves a family that cannot be rendered in the scrape's format out
// of the scrape, so that the scrape stays whole and valid (DESIGN §5: a
// scrape never fails halfway). Pushes refuse what some servable format
// cannot express, so this is a last line of defence.
func (fw *familyWriter) skip(err error) {
	if fw.skipped == 0 {
		fw.skipErr = err
	}
	fw.skipped++
}

// reportSkipped counts and logs, in one line per scrape, the families the
// scrape left out.
func (fw *familyWriter) reportSkipped() {
	fw.sn.RenderState().ReportSkipped(fw.f, fw.skipped, fw.skipErr)
	fw.skipped, fw.skipErr = 0, nil
}

// groupOfID returns the grouping key of a group ID as groupkey.Key.String
// writes it, for logs; an ID that does not parse (a bug) is quoted as it
// is.
func groupOfID(gid string) string {
	key, err := groupkey.ParseID(gid)
	if err != nil {
		return strconv.Quote(gid)
	}
	return key.String()
}

// renamesCounter reports whether the OpenMetrics family of the counter name
// must be written with its type unknown under name rather than as a
// counter: a counter
// X_total is the OpenMetrics family X, and another family named X in the
// scrape would make two families of one name, which OpenMetrics parsers
// reject (Python's prometheus_client refuses the whole body). The gateway's
// own go_memstats_alloc_bytes (a gauge) and go_memstats_alloc_bytes_total
// (a counter) do this in every scrape; pushes that would are refused.
//
// Why unknown under the full name: the sample lines stay
// go_memstats_alloc_bytes_total <value>, so the series Prometheus ingests
// keeps its name, and an unknown family's samples carry its name exactly.
// The alternatives change what is ingested or what checks it: a counter
// family named X_total would need samples named X_total_total, leaving the
// family out loses the series, and a gauge named X_total fails promtool's
// lint. The type is left unknown by writing HELP without TYPE
// (exposition.AppendHeaderWithoutType), which Prometheus, Python's parser
// and promtool all accept; "# TYPE X_total unknown" would stop promtool,
// which reads OpenMetrics with the text parser. Text and protobuf keep the
// counter type. Own names are legacy names, which no escaping changes, so
// this holds under every escaping.
func (fw *familyWriter) renamesCounter(name string, typ dto.MetricType) bool {
	if typ != dto.MetricType_COUNTER || fw.f.Encoding() != exposition.EncodingOpenMetrics {
		return false
	}
	family, ok := strings.CutSuffix(name, "_total")
	if !ok {
		return false
	}
	i := sort.Search(len(fw.own), func(i int) bool { return fw.own[i].GetName() >= family })
	if i < len(fw.own) && fw.own[i].GetName() == family {
		return true
	}
	return fw.sn.HasFamily(family)
}

// part is one family's body in a merged family: bytes rendered for this
// scrape, a plain family's cached text body, or a stored family whose
// protobuf bytes are fetched (and if need be decompressed) while writing.
type part struct {
	kind partKind
	body []byte
	fam  *store.Family
	// text is the family's cached body when the scrape is gzip-compressed
	// (its deflate segment is used); nil otherwise.
	text *render.TextBody
	// textPacked and textSize are the cached body's s2 block and length,
	// copied so that writing the part does not read the TextBody again:
	// between gathering a run and writing it, it has left the CPU cache (a
	// miss per family was 13% of a 10,000-group text scrape).
	textPacked []byte
	textSize   int
}

// partKind says where a part's bytes come from.
type partKind uint8

const (
	// partBody: body, rendered for this scrape.
	partBody partKind = iota
	// partProtobuf: the family's stored protobuf bytes.
	partProtobuf
	// partText: a cached text body, textPacked.
	partText
)

// writeOwn writes one of the gateway's own families, which no group shares.
func (fw *familyWriter) writeOwn(mf *dto.MetricFamily) error {
	return fw.writeRun(mf.GetName(), mf, nil)
}

// writeRun writes one merged family: the optional built-in family first,
// then every group's family of that name.
func (fw *familyWriter) writeRun(name string, own *dto.MetricFamily, run []store.Entry) error {
	var (
		help string
		typ  dto.MetricType
		unit string
	)
	switch {
	case own != nil:
		help, typ, unit = own.GetHelp(), own.GetType(), own.GetUnit()
	default:
		typ = run[0].Family().Type()
		for _, e := range run {
			if h := e.Family().Help(); h != "" {
				help = h
				break
			}
		}
		unit = run[0].Family().Unit()
	}
	if isProtoText(fw.f) {
		return fw.writeProtoTextRun(name, own, help, typ, unit, run)
	}
	untyped := fw.renamesCounter(name, typ)
	parts := fw.gather.parts[:0]
	if cap(parts) < len(run)+1 {
		// Sized once for the whole run: grown by append, the parts of a
		// 10,000-group run (80 bytes each) left 2.4 MB of garbage on a
		// gateway's first text scrape, which grew its heap (and RSS) by
		// as much (6.1 to 3.3 MB allocated by that scrape).
		parts = make([]part, 0, len(run)+1)
	}
	defer func() { fw.gather.parts = parts }()
	total := 0
	if own != nil && len(own.Metric) > 0 {
		b, err := exposition.AppendBody(nil, own, fw.f)
		if err != nil {
			fw.skip(fmt.Errorf("own family %q: %w", name, err))
		} else {
			parts = append(parts, part{body: b})
			total += len(b)
		}
	}
	enc := fw.f.Encoding()
	protobuf := enc == exposition.EncodingProtobuf
	var pre *prerenderer
	defer func() {
		if pre != nil {
			pre.wait()
		}
	}()
	for i := range run {
		if pre != nil {
			pre.reached(i)
		}
		if i%gatherAhead == 0 {
			fw.touchSlots(run[i:min(i+gatherAhead, len(run))], protobuf || fw.gz != nil)
		}
		f := run[i].Family()
		c := f.Cache()
		if packed, size, penc := c.Pushed(); !protobuf && fw.gz == nil && !fw.dropProtobuf && packed != nil && penc == enc {
			// The common case: the body the push rendered.
			parts = append(parts, part{kind: partText, fam: f, textPacked: packed, textSize: size})
			total += size
			continue
		}
		if fw.dropProtobuf {
			fw.dropped += c.DropProtobuf()
		}
		switch {
		case c.Plain() && protobuf:
			// The family needs no escaping: its protobuf bytes are
			// written as they are. The frame length comes first: add up
			// the lengths (from the s2 headers for bodies not cached yet)
			// and decompress while writing, one family at a time.
			if b, ok := c.ProtobufCached(); ok {
				// Cached by an earlier protobuf scrape: keep the bytes
				// in the part, so that writing it does not read the
				// family again.
				parts = append(parts, part{kind: partBody, body: b})
				total += len(b)
				continue
			}
			n, err := c.ProtobufLen(f)
			if err != nil {
				fw.skip(fmt.Errorf("group %s: %w", groupOfID(run[i].GroupID()), err))
				continue
			}
			parts = append(parts, part{kind: partProtobuf, fam: f})
			total += n
		case c.Plain() && !protobuf:
			if pre == nil && len(run)-i > prerenderMin && !c.HasText(enc) {
				pre = startPrerender(run, i, enc, &fw.preScratch)
			}
			tb, err := c.Text(f, enc, &fw.sc.Scratch)
			if err != nil {
				fw.skip(fmt.Errorf("group %s: %w", groupOfID(run[i].GroupID()), err))
				continue
			}
			parts = append(parts, part{kind: partText, fam: f, text: tb, textPacked: tb.Packed(), textSize: tb.Size()})
			total += tb.Size()
		default:
			// Not plain: the body depends on the scrape's escaping scheme,
			// so it is rendered every time.
			b, err := render.Body(f, fw.f)
			if err != nil {
				fw.skip(fmt.Errorf("group %s: %w", groupOfID(run[i].GroupID()), err))
				continue
			}
			parts = append(parts, part{body: b})
			total += len(b)
		}
	}
	if pre != nil {
		pre.wait()
		pre = nil
	}
	if total == 0 {
		return nil
	}
	var header []byte
	if untyped {
		header = exposition.AppendHeaderWithoutType(fw.buf[:0], name, help, unit, fw.f)
	} else {
		header = exposition.AppendHeader(fw.buf[:0], name, help, typ, unit, fw.f)
	}
	if protobuf {
		frame := exposition.AppendFrameLength(nil, len(header)+total)
		if _, err := fw.w.Write(frame); err != nil {
			return err
		}
	}
	if _, err := fw.w.Write(header); err != nil {
		return err
	}
	fw.buf = header
	for i := 0; i < len(parts); i++ {
		if fw.batches(parts[i]) {
			j := i + 1
			for j < len(parts) && fw.batches(parts[j]) {
				j++
			}
			if err := fw.writeTextBatches(parts[i:j]); err != nil {
				return err
			}
			i = j - 1
			continue
		}
		if err := fw.writePart(parts[i]); err != nil {
			return err
		}
	}
	return nil
}

// batches reports whether p is written by writeTextBatches: a cached text
// body that fits an output buffer, in a scrape that is not compressed.
func (fw *familyWriter) batches(p part) bool {
	return p.kind == partText && fw.out != nil && fw.gz == nil && p.textSize <= pipewrite.BufferSize
}

// gatherAhead is how many entries touchSlots reads ahead of gathering.
const gatherAhead = 64

// touchSlots reads each entry's slot and family, and with family the
// family's second cache line, in a tight loop of independent loads, so
// that the CPU fetches them in parallel before gathering needs them one by
// one (a dependent cache miss per family was 10% of a 10,000-group text
// scrape, and two were 30% of a protobuf scrape, which reads the family).
// Go has no prefetch instruction; this is the next best thing. Measured
// against a build without it, BenchmarkScrape at 10,000 groups, 15
// alternating runs, CPU per scrape: protobuf 16.7 against 19.8 ms (±7%,
// ±14%), gzip of cached segments 20.2 against 23.1 ms (±5%, ±11%); text
// and OpenMetrics within the noise.
func (fw *familyWriter) touchSlots(run []store.Entry, family bool) {
	var sum byte
	for i := range run {
		f := run[i].Family()
		c := f.Cache()
		_, size, _ := c.Pushed()
		sum += byte(size)
		if family {
			// A family spans two cache lines; gathering reads both.
			sum += byte(f.Type())
			if c.CachedText() != nil {
				sum++
			} else if _, ok := c.ProtobufCached(); ok {
				sum++
			}
		}
	}
	fw.touched += sum
}

// writePart writes one part of a merged family.
func (fw *familyWriter) writePart(p part) error {
	switch {
	case p.kind == partProtobuf:
		b, err := p.fam.Cache().Protobuf(p.fam)
		if err != nil {
			return err
		}
		_, err = fw.w.Write(b)
		return err
	case p.kind == partText && p.textSize == 0:
		return nil
	case p.kind == partText && p.text != nil && fw.gz != nil:
		return fw.writeGzipText(p.fam, p.text)
	case p.kind == partText:
		// A body larger than an output buffer (writeTextBatches takes the
		// others): decoded on its own and copied in.
		b, err := s2.Decode(nil, p.textPacked)
		if err != nil {
			return fmt.Errorf("decompress cached body of %q: %w", p.fam.Name(), err)
		}
		_, err = fw.w.Write(b)
		return err
	}
	_, err := fw.w.Write(p.body)
	return err
}
