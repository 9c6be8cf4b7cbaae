package store

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/render"
)

// textPusher pushes text bodies as the web handler does: read, offered to
// PushText when templates is set, else decoded and pushed, with the
// decoded body as the push's Source only when templates is set.
type textPusher struct {
	s         *Store
	templates bool
}

// push pushes body to key and reports whether PushText applied it.
func (tp textPusher) push(t testing.TB, key groupkey.Key, method Method, body []byte, at time.Time) (bool, error) {
	t.Helper()
	ctx := context.Background()
	rd, err := exposition.Read(bytes.NewReader(body), "text/plain; version=0.0.4", exposition.DecodeOptions{})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	p := Push{Key: key, Method: method, Time: at}
	if tp.templates {
		_, handled, err := tp.s.PushText(ctx, p, rd.Text())
		if handled {
			rd.Release()
			return true, err
		}
	}
	d, err := rd.Decode()
	if err != nil {
		return false, err
	}
	p.Families, p.KnownFields, p.Disposable = d.Families, d.KnownFields, true
	if tp.templates {
		p.Source = d
	}
	_, err = tp.s.Push(ctx, p)
	d.Release()
	return false, err
}

// shapeBody renders one of three shapes with values drawn from r: 0 and 1
// share the family "shared_total" (so that merges mix them), 2 holds a
// histogram and a summary whose counts are sometimes ones the template
// cannot store (a fraction, a negative summary count) or the push cannot
// hold (a float histogram is refused).
func shapeBody(r *rand.Rand, shape int) []byte {
	v := func() string {
		switch r.IntN(12) {
		case 0:
			return "NaN"
		case 1:
			return "+Inf"
		case 2:
			return "-0"
		case 3:
			return fmt.Sprint(-r.IntN(1000))
		case 4:
			return fmt.Sprintf("%g", r.Float64()*1e20)
		default:
			return fmt.Sprintf("%g", r.Float64()*1000)
		}
	}
	count := func() string {
		switch r.IntN(20) {
		case 0:
			return "2.5"
		case 1:
			return "-1"
		default:
			return fmt.Sprint(r.IntN(5000))
		}
	}
	var b strings.Builder
	switch shape {
	case 0:
		fmt.Fprintf(&b, "# HELP shared_total A counter both shapes hold.\n# TYPE shared_total counter\n")
		fmt.Fprintf(&b, "shared_total{a=\"x\"} %s\nshared_total{a=\"y\\\"q\"} %s\n", v(), v())
		fmt.Fprintf(&b, "# TYPE g0 gauge\ng0 %s\ng0{b=\"1\",c=\"2\"} %s\n", v(), v())
	case 1:
		fmt.Fprintf(&b, "# TYPE shared_total counter\nshared_total{a=\"z\"} %s\n", v())
		fmt.Fprintf(&b, "untyped_one{k=\"v\"} %s\n", v())
	case 2:
		fmt.Fprintf(&b, "# TYPE lat histogram\n")
		for _, le := range []string{"0.1", "+Inf", "1"} { // Out of order: admission sorts them.
			fmt.Fprintf(&b, "lat_bucket{le=%q,op=\"r\"} %s\n", le, count())
		}
		fmt.Fprintf(&b, "lat_sum{op=\"r\"} %s\nlat_count{op=\"r\"} %s\n", v(), count())
		fmt.Fprintf(&b, "# TYPE q summary\nq{quantile=\"0.5\"} %s\nq{quantile=\"0.9\"} %s\nq_sum %s\nq_count %s\n", v(), v(), v(), count())
	}
	return []byte(b.String())
}

// sameGroups fails unless a and b hold the same groups with the same
// families: identity, stored bytes, pushed text bodies and times.
func sameGroups(t *testing.T, step int, a, b *Store) {
	t.Helper()
	ga, gb := a.Groups(), b.Groups()
	if len(ga) != len(gb) {
		t.Fatalf("step %d: %d groups against %d", step, len(ga), len(gb))
	}
	for i := range ga {
		x, y := ga[i], gb[i]
		if x.Key().ID() != y.Key().ID() || !x.PushTime().Equal(y.PushTime()) || !x.FailureTime().Equal(y.FailureTime()) || x.FailureReason() != y.FailureReason() {
			t.Fatalf("step %d: group %s differs: push %v/%v failure %v/%v %q/%q", step, x.Key(), x.PushTime(), y.PushTime(), x.FailureTime(), y.FailureTime(), x.FailureReason(), y.FailureReason())
		}
		fx, fy := x.Families(), y.Families()
		if len(fx) != len(fy) {
			t.Fatalf("step %d: group %s: %d families against %d", step, x.Key(), len(fx), len(fy))
		}
		for j := range fx {
			f, g := fx[j], fy[j]
			if f.Name() != g.Name() || f.Help() != g.Help() || f.Type() != g.Type() || f.Unit() != g.Unit() ||
				!slices.Equal(f.series(), g.series()) || !slices.Equal(f.labelNames(), g.labelNames()) ||
				f.cache.Plain() != g.cache.Plain() || !x.FamilyTime(f).Equal(y.FamilyTime(g)) {
				t.Fatalf("step %d: group %s: family %q differs in its identity or time", step, x.Key(), f.Name())
			}
			if !bytes.Equal(metricsOf(t, f), metricsOf(t, g)) {
				t.Fatalf("step %d: group %s: family %q stores other bytes", step, x.Key(), f.Name())
			}
			// What a record of each holds (a family kept as a skeleton
			// and value area is compressed again for it).
			bx, errX := f.cache.Block()
			by, errY := g.cache.Block()
			if errX != nil || errY != nil || !bytes.Equal(unpack(t, bx), unpack(t, by)) {
				t.Fatalf("step %d: group %s: family %q has another block for the journal (%v, %v)", step, x.Key(), f.Name(), errX, errY)
			}
			tx, nx, ex := f.cache.Pushed()
			ty, ny, ey := g.cache.Pushed()
			if (tx == nil) != (ty == nil) || nx != ny || ex != ey || tx != nil && !bytes.Equal(unpack(t, tx), unpack(t, ty)) {
				t.Fatalf("step %d: group %s: family %q has another pushed text body", step, x.Key(), f.Name())
			}
		}
	}
}

// unpack decompresses an s2 block.
func unpack(t *testing.T, block []byte) []byte {
	t.Helper()
	b, err := s2.Decode(nil, block)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPushesFromTemplatesStoreWhatParsedPushesStore pushes one random
// sequence of text bodies (three shapes, PUT and POST, values the
// template cannot store and pushes the store refuses among them, text
// scrapes between) into a store that applies same-shape pushes from their
// group's template and into one that parses every push, and requires the
// same outcome of every push and the same groups after it, byte for byte.
func TestPushesFromTemplatesStoreWhatParsedPushesStore(t *testing.T) {
	for _, utf8Names := range []bool{false, true} {
		t.Run(fmt.Sprintf("utf8names=%v", utf8Names), func(t *testing.T) {
			samePushesFromTemplates(t, Options{UTF8Names: utf8Names})
		})
	}
}

// samePushesFromTemplates is TestPushesFromTemplatesStoreWhatParsedPushesStore
// for stores made with opts.
func samePushesFromTemplates(t *testing.T, opts Options) {
	fast, slow := New(opts), New(opts)
	slow.seed = fast.seed // The same series hashes in both.
	tf, ts := textPusher{s: fast, templates: true}, textPusher{s: slow}
	r := rand.New(rand.NewPCG(1, 2))
	keys := []groupkey.Key{storetest.Key("job", "a"), storetest.Key("job", "b", "instance", "x"), storetest.Key("job", "c")}
	at := time.Unix(1_700_000_000, 0)
	handled := 0
	for step := range 1500 {
		if r.IntN(25) == 0 {
			// A scrape starts, in text or OpenMetrics; in the store that
			// applies templates it caches every family's body, which
			// pushes then write their bodies from.
			enc := exposition.EncodingText
			if r.IntN(2) == 0 {
				enc = exposition.EncodingOpenMetrics
			}
			fast.render.StartScrape(enc)
			slow.render.StartScrape(enc)
			var sc render.Scratch
			for _, g := range fast.Groups() {
				for _, f := range g.Families() {
					if f.cache.Plain() {
						if _, err := f.cache.Text(f, enc, &sc); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
		key := keys[r.IntN(len(keys))]
		method := Replace
		if r.IntN(4) == 0 {
			method = Merge
		}
		shape := r.IntN(3)
		if r.IntN(3) > 0 {
			shape = step % 3 / 2 * 2 // Mostly shapes 0 and 2, so groups repeat shapes.
		}
		body := shapeBody(r, shape)
		at = at.Add(time.Second)
		h, errFast := tf.push(t, key, method, body, at)
		_, errSlow := ts.push(t, key, method, body, at)
		if fmt.Sprint(errFast) != fmt.Sprint(errSlow) {
			t.Fatalf("step %d: push of\n%s\nfailed with %v, parsed: %v", step, body, errFast, errSlow)
		}
		if h {
			handled++
		}
		sameGroups(t, step, fast, slow)
	}
	if handled < 300 || fast.TemplatePushes() != uint64(handled) {
		t.Fatalf("%d pushes applied from templates (counted %d): too few to test them", handled, fast.TemplatePushes())
	}
	// Most of those wrote values beside a copy of the last push's
	// skeleton; the others (a count whose varint grew, a text body to
	// render with none to write it from) decompressed the last bytes.
	if copies := fast.templates.sharedSkeletons.Load(); copies < uint64(handled) {
		t.Fatalf("%d families written beside a shared skeleton in %d pushes from templates: too few to test them", copies, handled)
	}
	if slow.TemplatePushes() != 0 {
		t.Fatalf("the store without sources applied %d pushes from templates", slow.TemplatePushes())
	}
	t.Logf("%d of 1500 pushes applied from templates, %d families written beside a shared skeleton", handled, fast.templates.sharedSkeletons.Load())
}

// TestPushTextLeavesOtherShapesToPush checks that PushText does nothing,
// and says so, for a group without a template, a body of another shape,
// and a group changed by a protobuf-style push (no Source) since.
func TestPushTextLeavesOtherShapesToPush(t *testing.T) {
	s := New(Options{})
	tp := textPusher{s: s, templates: true}
	key := storetest.Key("job", "j")
	at := time.Unix(1_700_000_000, 0)
	body := func(seq int) []byte { return payload.Text(0, seq) }
	ctx := context.Background()
	if _, handled, err := s.PushText(ctx, Push{Key: key, Time: at}, body(1)); handled || err != nil {
		t.Fatalf("a push to an absent group was handled (%v)", err)
	}
	if h, err := tp.push(t, key, Replace, body(1), at); h || err != nil {
		t.Fatalf("first push: handled %v, err %v", h, err)
	}
	if h, err := tp.push(t, key, Replace, body(2), at.Add(time.Second)); !h || err != nil {
		t.Fatalf("a push of the same shape: handled %v, err %v", h, err)
	}
	other := append(body(3), "extra_metric 1\n"...)
	if _, handled, _ := s.PushText(ctx, Push{Key: key, Time: at}, other); handled {
		t.Fatal("a body with one more line was handled")
	}
	// A push without a Source leaves the group without a template.
	if _, err := s.Push(ctx, Push{Key: key, Families: storetest.Families(t, "x_total 1\n"), Time: at.Add(2 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, handled, _ := s.PushText(ctx, Push{Key: key, Time: at}, body(4)); handled {
		t.Fatal("a push to a group changed without a template was handled")
	}
}

// TestConcurrentSameShapePushesInstallWholeBodies pushes bodies of one
// shape to one group from several goroutines at once, so that pushes built
// from a group another push has just replaced meet (install refuses them
// and they go the whole way): every push succeeds, and the group ends with
// the values of exactly one of the bodies.
func TestConcurrentSameShapePushesInstallWholeBodies(t *testing.T) {
	s := New(Options{})
	tp := textPusher{s: s, templates: true}
	key := storetest.Key("job", "race")
	body := func(v int) []byte {
		return fmt.Appendf(nil, "# TYPE a_total counter\na_total{x=\"1\"} %d\na_total{x=\"2\"} %d\n# TYPE b gauge\nb %d\n", v, v, v)
	}
	at := time.Unix(1_700_000_000, 0)
	if _, err := tp.push(t, key, Replace, body(0), at); err != nil {
		t.Fatal(err)
	}
	const workers, pushes = 4, 200
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range pushes {
				v := 1 + w*pushes + i
				if _, err := tp.push(t, key, Replace, body(v), at.Add(time.Duration(v)*time.Millisecond)); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	fams := map[string]string{}
	for _, f := range s.Group(key).Families() {
		text, err := render.Body(f, exposition.NewFormat(exposition.EncodingText))
		if err != nil {
			t.Fatal(err)
		}
		fams[f.Name()] = string(text)
	}
	var v int
	if _, err := fmt.Sscanf(fams["b"][strings.LastIndexByte(strings.TrimSpace(fams["b"]), ' ')+1:], "%d", &v); err != nil {
		t.Fatalf("gauge b: %v\n%s", err, fams["b"])
	}
	want := fmt.Sprintf("a_total{instance=\"\",job=\"race\",x=\"1\"} %d\na_total{instance=\"\",job=\"race\",x=\"2\"} %d\n", v, v)
	if !strings.Contains(fams["a_total"], want) {
		t.Fatalf("the group mixes pushes: b is %d, a_total is\n%s", v, fams["a_total"])
	}
	t.Logf("%d of %d pushes from the template", s.TemplatePushes(), workers*pushes)
}

// metricsOf returns f's protobuf bytes, its values applied.
func metricsOf(t *testing.T, f *Family) []byte {
	t.Helper()
	b, err := f.cache.AppendMetrics(nil)
	if err != nil {
		t.Fatalf("family %s: %v", f.Name(), err)
	}
	return b
}
