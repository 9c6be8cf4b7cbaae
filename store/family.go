package store

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"time"
	"unique"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/exposition"
)

// Family is one stored metric family of one group. It is immutable once
// installed, except for its render cache, which is filled atomically.
//
// The canonical form is the protobuf encoding of the family's metrics (the
// repeated field 4 of io.prometheus.client.MetricFamily): it is what a
// protobuf scrape copies, what the journal stores, and what the API decodes.
// Keeping bytes instead of the decoded dto objects is what keeps the store
// small: a decoded family costs several times its wire size in pointers.
//
// Names, HELP texts and units are interned: every group of a batch job pushes
// the same ones, and at 10,000 groups of the bench payload their copies took
// 11 MB. A unique.Handle is also half the size of a string header.
type Family struct {
	name unique.Handle[string]
	help unique.Handle[string]
	unit unique.Handle[string]
	// lastPush is the push time in Unix nanoseconds, 0 for never: a
	// time.Time is three words and holds a pointer.
	lastPush int64
	typ      dto.MetricType
	// plain is true when every name in the family is a legacy name, so its
	// rendering does not depend on the scrape's escaping scheme and can be
	// cached per encoding.
	plain bool
	// metrics holds the protobuf bytes of field 4 for every metric.
	metrics []byte
	// series holds one hash per metric (name plus sorted labels), for the
	// consistency index.
	series []uint64
	// rendered caches the text or OpenMetrics body of the encoding last
	// scraped; only one is kept, to bound memory.
	rendered atomic.Pointer[renderedBody]
}

// renderedBody is a cached body for one encoding.
type renderedBody struct {
	enc  exposition.Encoding
	body []byte
}

// newFamily builds a stored family from a sanitized, validated dto family.
// series holds the already computed series hashes. If renderFor is a text
// encoding, its body is rendered now, on the push path, so that scrapes only
// copy bytes.
func newFamily(mf *dto.MetricFamily, series []uint64, at time.Time, renderFor exposition.Encoding) (*Family, error) {
	plain := isPlain(mf)
	f := &Family{
		name:     unique.Make(mf.GetName()),
		help:     unique.Make(mf.GetHelp()),
		unit:     unique.Make(mf.GetUnit()),
		typ:      mf.GetType(),
		lastPush: timeNanos(at),
		plain:    plain,
		series:   series,
	}
	var err error
	// Render into a scratch buffer and keep exact-size copies: appending
	// leaves up to half of a buffer's capacity unused, which at 10,000
	// groups was 40% of the store's memory.
	scratch := make([]byte, 0, 4096)
	scratch, err = exposition.AppendBody(scratch, mf, exposition.NewFormat(exposition.EncodingProtobuf))
	if err != nil {
		return nil, fmt.Errorf("encode family %q: %w", mf.GetName(), err)
	}
	f.metrics = bytes.Clone(scratch)
	if plain && renderFor != exposition.EncodingProtobuf {
		scratch, err = exposition.AppendBody(scratch[:0], mf, exposition.NewFormat(renderFor))
		if err != nil {
			return nil, fmt.Errorf("render family %q: %w", mf.GetName(), err)
		}
		f.rendered.Store(&renderedBody{enc: renderFor, body: bytes.Clone(scratch)})
	}
	return f, nil
}

// Name returns the metric family name.
func (f *Family) Name() string { return f.name.Value() }

// Help returns the HELP text as pushed.
func (f *Family) Help() string { return f.help.Value() }

// Type returns the metric type.
func (f *Family) Type() dto.MetricType { return f.typ }

// LastPush returns the time of the push that stored this family.
func (f *Family) LastPush() time.Time { return nanosTime(f.lastPush) }

// Unit returns the unit as pushed (OpenMetrics), or "".
func (f *Family) Unit() string { return f.unit.Value() }

// SeriesCount returns the number of metrics (series) in the family.
func (f *Family) SeriesCount() int { return len(f.series) }

// Decode returns the family as a new dto object.
func (f *Family) Decode() (*dto.MetricFamily, error) {
	mf := &dto.MetricFamily{Name: proto.String(f.Name()), Type: f.typ.Enum()}
	if h := f.Help(); h != "" {
		mf.Help = proto.String(h)
	}
	if u := f.Unit(); u != "" {
		mf.Unit = proto.String(u)
	}
	if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(f.metrics, mf); err != nil {
		return nil, fmt.Errorf("decode stored family %q: %w", f.Name(), err)
	}
	return mf, nil
}

// body returns the family's metrics in format fm. The returned slice may be
// shared with the cache and must not be modified. Plain families are served
// from the protobuf bytes or the render cache; other families are rendered
// for the scrape's escaping scheme every time.
func (f *Family) body(fm exposition.Format) ([]byte, error) {
	enc := fm.Encoding()
	if f.plain {
		if enc == exposition.EncodingProtobuf {
			return f.metrics, nil
		}
		if r := f.rendered.Load(); r != nil && r.enc == enc {
			return r.body, nil
		}
	}
	mf, err := f.Decode()
	if err != nil {
		return nil, err
	}
	if !f.plain {
		return exposition.AppendBody(nil, mf, fm)
	}
	body, err := exposition.AppendBody(nil, mf, exposition.NewFormat(enc))
	if err != nil {
		return nil, fmt.Errorf("render family %q: %w", f.Name(), err)
	}
	f.rendered.Store(&renderedBody{enc: enc, body: body})
	return body, nil
}

// isPlain reports whether all names in mf are legacy names.
func isPlain(mf *dto.MetricFamily) bool {
	if !exposition.ValidMetricName(mf.GetName(), false) {
		return false
	}
	for _, m := range mf.GetMetric() {
		for _, lp := range m.GetLabel() {
			if !exposition.ValidLabelName(lp.GetName(), false) {
				return false
			}
		}
	}
	return true
}
