package store

import (
	"context"
	"errors"
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
	in := installing{fams: sc.fams, prepared: sc.prepared, enc: enc, textScrapes: textScrapes, tmpl: tmpl, from: old}
	// Both the template's families and the group's are sorted by name.
	var buf [16]*Family
	for i, of := range counterpartsOf(n, tmpl.FamilyName, old.families, buf[:]) {
		if of == nil {
			return 0, false, nil
		}
		f, ok := repushFamily(of, tmpl, i, at, enc, sc)
		if !ok {
			return 0, false, nil
		}
		in.fams[i] = f
		// What the index's check reads: the series are those of, and
		// already indexed for, the family replaced.
		id := &sc.ids[i]
		id.name, id.typ = of.Name(), of.Type()
		id.mf = dto.MetricFamily{Name: &id.name, Type: &id.typ}
		in.prepared[i] = admission.Family{
			MF:     &id.mf,
			Series: of.series,
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
	}
	return pos, true, err
}

// repushFamily returns of, family i of tmpl, with the values sc.vals,
// pushed at at and rendered in enc; ok is false when a value cannot be
// stored from the template (TextTemplate.AppendFamily), or of's bytes
// cannot be read. The new family shares of's identity: name, HELP text,
// type, series hashes and label names.
func repushFamily(of *Family, tmpl *exposition.TextTemplate, i int, at int64, enc exposition.Encoding, sc *scratch) (*Family, bool) {
	// A block that does not decompress is left to Push, which replaces
	// it without reading it.
	oldBytes, err := decodeBlock(&sc.old, of.Packed())
	if err != nil {
		return nil, false
	}
	var ok bool
	if sc.body, ok = tmpl.AppendFamily(sc.body[:0], i, oldBytes, sc.vals); !ok {
		return nil, false
	}
	old, written := oldText(of, enc, sc)
	if written {
		sc.newText, written = tmpl.AppendFamilyText(sc.newText[:0], i, enc, old, sc.vals)
	}
	return nextFamily(of, at, enc, written, sc), true
}

// oldText returns of's text body in enc, rendered at its push or cached by
// a scrape, decompressed into sc.oldText, and whether it has one: a text
// body the push writes from it, values only, when enc is a text encoding
// of a plain family. Otherwise the family's body is rendered from its new
// protobuf bytes (render.Cache.FillStored), which decodes them first.
func oldText(of *Family, enc exposition.Encoding, sc *scratch) ([]byte, bool) {
	if enc == exposition.EncodingProtobuf || !of.cache.Plain() {
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
// in sc.newText when written, else rendered from the bytes.
func nextFamily(of *Family, at int64, enc exposition.Encoding, written bool, sc *scratch) *Family {
	f := &Family{meta: of.meta, lastPush: at, series: of.series, extra: of.extra}
	plain, pb := of.cache.Plain(), render.EncodeInto(&sc.packed, sc.body)
	if written {
		f.cache.FillBody(sc.newText, plain, enc, pb, &sc.text)
		return f
	}
	stored := exposition.StoredFamily{Name: of.Name(), Help: of.Help(), Unit: of.Unit(), Type: of.Type(), Metrics: sc.body}
	f.cache.FillStored(stored, plain, enc, pb, &sc.text)
	return f
}

// retime returns g's time family name (PushTimeName or
// PushFailureTimeName) at time at, written from g's own
// (exposition.SetValues, and SetTextValues from its text body in enc when
// it has one), or nil when g has none that can be: a family whose time is
// all that changes is not built anew (timeFamily), which renders it, hashes
// its series and encodes it from a dto object.
func retime(g *Group, name string, at int64, enc exposition.Encoding, sc *scratch) *Family {
	of := g.families.get(name)
	if of == nil {
		return nil
	}
	old, err := decodeBlock(&sc.old, of.Packed())
	if err != nil {
		return nil
	}
	vals := append(sc.vals[:0], unixSeconds(at))
	sc.vals = vals
	var ok bool
	if sc.body, ok = exposition.SetValues(sc.body[:0], old, vals); !ok {
		return nil
	}
	text, written := oldText(of, enc, sc)
	if written {
		sc.newText, written = exposition.SetTextValues(sc.newText[:0], text, enc, vals)
	}
	return nextFamily(of, at, enc, written, sc)
}
