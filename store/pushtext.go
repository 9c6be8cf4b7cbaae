package store

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"

	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupcodec"
	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/render"
)

// PushText applies a push of the text body body (Families unused) when
// the body has the skeleton of the push that gave the group its families
// (exposition.TextTemplate): the group's families are stored again with
// the body's values, and nothing is parsed, checked or hashed but the
// values. handled is false when the store did nothing, because the group
// has no template, the body does not match it, a value is not one the
// template can store, or the group changed meanwhile: the caller then
// decodes the body and calls Push, which decides as it always does.
// When handled, the outcome is what Push's would have been.
func (s *Store) PushText(ctx context.Context, p Push, body []byte) (pos journal.Position, handled bool, err error) {
	if p.Expect != nil || len(p.States) > 0 {
		return 0, false, nil
	}
	gid := p.Key.ID()
	s.mu.Lock()
	old := s.headGroup(gid)
	// With a journal, every push encodes its group's record under the
	// lock, and a skeleton would be compressed again there.
	skeletons := s.journal == nil
	s.mu.Unlock()
	if old == nil || old.tmpl == nil {
		return 0, false, nil
	}
	tmpl := old.tmpl
	sc := s.render.scratch()
	defer s.render.putScratch(sc)
	var ok bool
	if sc.vals, ok = tmpl.Match(body, sc.vals[:0]); !ok {
		return 0, false, nil
	}
	enc, textScrapes := s.render.encoding(), s.render.TextScrapes()
	if !s.renderAtPush(old, p.Time, textScrapes) {
		enc = exposition.EncodingProtobuf
	}
	n := tmpl.Families()
	sc.fams, sc.prepared = slices.Grow(sc.fams[:0], n)[:n], slices.Grow(sc.prepared[:0], n)[:n]
	sc.ids = slices.Grow(sc.ids[:0], n)[:n]
	at := groupcodec.UnixNanos(p.Time)
	in := installing{fams: sc.fams, prepared: sc.prepared, enc: enc, textScrapes: textScrapes, tmpl: tmpl, from: old, skeletons: skeletons}
	// Both the template's families and the group's are sorted by name.
	var buf [16]*Family
	shares := 0
	for i, of := range counterpartsOf(n, tmpl.FamilyName, old.families, buf[:]) {
		if of == nil {
			return 0, false, nil
		}
		f, sharedSkeleton, ok := repushFamily(of, tmpl, i, at, enc, skeletons, sc)
		if !ok {
			return 0, false, nil
		}
		if sharedSkeleton {
			shares++
		}
		in.fams[i] = f
		// What the index's check reads: the series are those of, and
		// already indexed for, the family replaced.
		id := &sc.ids[i]
		id.name, id.typ = of.Name(), of.Type()
		id.mf = dto.MetricFamily{Name: &id.name, Type: &id.typ}
		in.prepared[i] = admission.Family{
			MF:     &id.mf,
			Series: of.series(),
			Plain:  of.cache.Plain(),
			Labels: of.labelNames(),
		}
	}
	pos, err = s.installPush(ctx, p, in, sc)
	if errors.Is(err, errStale) {
		return 0, false, nil
	}
	var rej *admission.Error
	if errors.As(err, &rej) && rej.Class == admission.Refused {
		s.recordFailure(ctx, p.Key, p.Time, rej.Msg)
	}
	if err == nil {
		s.templates.reused.Add(1)
		s.templates.sharedSkeletons.Add(uint64(shares))
	}
	return pos, true, err
}

// repushFamily returns of, family i of tmpl, with the values sc.vals,
// pushed at at and rendered in enc; ok is false when a value cannot be
// stored from the template (TextTemplate.AppendFamily), or of's bytes
// cannot be read. The new family shares of's identity: name, HELP text,
// type, series hashes and label names. shared says whether it was written
// as a new value area beside of's skeleton.
//
// With skeletons, the new family is kept as the s2 block of its skeleton
// and its value area (exposition.ExtractValues). When of is kept so too,
// the push only writes the new area (TextTemplate.AppendValues) and
// shares of's skeleton block (render.Skeleton): nothing is decompressed,
// walked, compressed or copied, unless the push renders the family's text
// body and of has none to write it from. Decompressing, rewriting and
// compressing the last push's bytes was a quarter of the server's CPU per
// push at 10,000 groups of the bench payload; without it, store's
// BenchmarkPushText push=template took 13.2 us against 29.5 (6 alternating
// runs), and the server's CPU per keep-alive PUT, 8 clients for 10 s after
// a checked fill, 86-95 us against 100-122 (3 alternating runs). Sharing
// the skeleton instead of copying it took a push's allocations from 3.5 to
// 1.9 KB (BenchmarkPushText, 12 alternating runs) and the server's CPU per
// push, measured as above, from 70-99 us (median 85) to 64-83 (median 75;
// 8 alternating runs).
//
// Only a push from the template makes a skeleton; the group's first push,
// parsed, keeps whole blocks. The two parts take 8% more than the block
// (a group of the bench payload: 1,748 + 452 bytes against 2,029, since
// s2 compresses the values in place better than an area holds them), so
// a group pushed once costs nothing more, and BenchmarkStoreHeap's
// fill=repushed (every group pushed again from its template) holds 1.8 MB
// more at 10,000 groups (54.9 MB against 53.2). A read of such a family
// (a protobuf scrape, a text body rendered from the bytes) writes the
// values in once per push it reads (render.Cache.AppendMetrics:
// BenchmarkReadRepushed, 1.08 us a family against 0.46).
func repushFamily(of *Family, tmpl *exposition.TextTemplate, i int, at int64, enc exposition.Encoding, skeletons bool, sc *scratch) (f *Family, shared, ok bool) {
	old, written := oldText(of, enc, sc)
	if written {
		sc.newText, written = tmpl.AppendFamilyText(sc.newText[:0], i, enc, old, sc.vals)
	}
	skel, kept := of.cache.Skeleton()
	if skeletons && kept && (written || !rendersText(of, enc)) {
		if sc.area, ok = tmpl.AppendValues(sc.area[:0], i, sc.vals); ok && len(sc.area) > 0 && len(sc.area) <= render.MaxArea {
			return followingFamily(of, at, enc, written, render.SkeletonAndArea(skel, sc.area), sc), true, true
		}
	}
	// A block that does not decompress is left to Push, which replaces
	// it without reading it.
	oldBytes, err := of.cache.AppendMetrics(sc.old[:0])
	sc.old = oldBytes
	if err != nil {
		return nil, false, false
	}
	if sc.body, ok = tmpl.AppendFamily(sc.body[:0], i, oldBytes, sc.vals); !ok {
		return nil, false, false
	}
	return nextFamily(of, at, enc, written, skeletons, sc), false, true
}

// rendersText reports whether a push in enc renders of's text body: a
// plain family's, in a text encoding.
func rendersText(of *Family, enc exposition.Encoding) bool {
	return enc != exposition.EncodingProtobuf && of.cache.Plain()
}

// oldText returns of's text body in enc, rendered at its push or cached by
// a scrape, decompressed into sc.oldText, and whether it has one: a text
// body the push writes from it, values only, when enc is a text encoding
// of a plain family. Otherwise the family's body is rendered from its new
// protobuf bytes (render.Cache.FillStored), which decodes them first.
func oldText(of *Family, enc exposition.Encoding, sc *scratch) ([]byte, bool) {
	if !rendersText(of, enc) {
		return nil, false
	}
	packed, ok := of.cache.TextIn(enc)
	if !ok {
		return nil, false
	}
	text, err := decodeBlock(&sc.oldText, packed)
	return text, err == nil
}

// nextFamily returns the family that follows of: the protobuf bytes in
// sc.body, pushed at at, of's identity, and its text body in enc the one
// in sc.newText when written, else rendered from the bytes. With
// skeletons, it is kept as its skeleton and value area.
func nextFamily(of *Family, at int64, enc exposition.Encoding, written, skeletons bool, sc *scratch) *Family {
	return followingFamily(of, at, enc, written, skeletonOf(skeletons, sc), sc)
}

// skeletonOf returns the protobuf bytes in sc.body as a fill keeps them:
// their s2 block; or, with skeleton, the s2 block of the family's skeleton
// (made in sc.skeleton) and its value area in sc.area, when the bytes hold
// only fields a text push can hold and their area fits the cache.
func skeletonOf(skeleton bool, sc *scratch) render.Metrics {
	if skeleton {
		sc.skeleton = append(sc.skeleton[:0], sc.body...)
		var ok bool
		if sc.area, ok = exposition.ExtractValues(sc.area[:0], sc.skeleton); ok && len(sc.area) > 0 && len(sc.area) <= render.MaxArea {
			return render.SkeletonAndArea(render.NewSkeleton(render.EncodeInto(&sc.packed, sc.skeleton)), sc.area)
		}
	}
	return render.WholeBlock(render.EncodeInto(&sc.packed, sc.body))
}

// followingFamily returns the family that follows of: the protobuf bytes
// m, pushed at at, of's identity, and its text body in enc the one in
// sc.newText when written, else rendered from the protobuf bytes in
// sc.body.
func followingFamily(of *Family, at int64, enc exposition.Encoding, written bool, m render.Metrics, sc *scratch) *Family {
	f := &Family{meta: of.meta, lastPush: at, hashes: of.hashes, nhashes: of.nhashes, extra: of.extra}
	plain := of.cache.Plain()
	if written {
		f.cache.FillBody(sc.newText, plain, enc, m, &sc.text)
		return f
	}
	// The family is rendered from its bytes only where the push renders
	// text: a push from the template with a shared skeleton has no bytes
	// in sc.body, and reads nothing of of's identity.
	var stored exposition.StoredFamily
	if rendersText(of, enc) {
		stored = exposition.StoredFamily{Name: of.Name(), Help: of.Help(), Unit: of.Unit(), Type: of.Type(), Metrics: sc.body}
	}
	f.cache.FillStored(stored, plain, enc, m, &sc.text)
	return f
}

// retime returns g's time family name (PushTimeName or
// PushFailureTimeName) at time at, written from g's own
// (exposition.SetValues, and SetTextValues from its text body in enc when
// it has one), or nil when g has none that can be: a family whose time is
// all that changes is not built anew (timeFamily), which renders it, hashes
// its series and encodes it from a dto object. With skeletons, as for
// repushFamily, a family kept as its skeleton and value area is written as
// a new area of one double.
func retime(g *Group, name string, at int64, enc exposition.Encoding, skeletons bool, sc *scratch) *Family {
	of := g.families.get(name)
	if of == nil {
		return nil
	}
	vals := append(sc.vals[:0], unixSeconds(at))
	sc.vals = vals
	text, written := oldText(of, enc, sc)
	if written {
		sc.newText, written = exposition.SetTextValues(sc.newText[:0], text, enc, vals)
	}
	skel, kept := of.cache.Skeleton()
	if _, prev := of.cache.Stored(); skeletons && kept && len(prev) == 8 && (written || !rendersText(of, enc)) {
		// A time family is one gauge: its area is one double.
		sc.area = binary.LittleEndian.AppendUint64(sc.area[:0], math.Float64bits(vals[0]))
		return followingFamily(of, at, enc, written, render.SkeletonAndArea(skel, sc.area), sc)
	}
	old, err := of.cache.AppendMetrics(sc.old[:0])
	sc.old = old
	if err != nil {
		return nil
	}
	var ok bool
	if sc.body, ok = exposition.SetValues(sc.body[:0], old, vals); !ok {
		return nil
	}
	return nextFamily(of, at, enc, written, skeletons, sc)
}
