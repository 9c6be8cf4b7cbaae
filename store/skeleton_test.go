package store

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupcodec"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/render"
)

// pushBenchThrice pushes the bench payload's text body to n groups, then
// twice again with other values, through textPusher with templates.
func pushBenchThrice(t *testing.T, s *Store, n int) {
	t.Helper()
	tp := textPusher{s: s, templates: true}
	at := time.Unix(1_700_000_000, 0)
	for seq := 1; seq <= 3; seq++ {
		for i := range n {
			k := groupkey.New(map[string]string{"job": payload.Job, "instance": fmt.Sprintf("i%d", i)})
			if _, err := tp.push(t, k, Replace, payload.Text(i, seq), at.Add(time.Duration(seq)*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if s.TemplatePushes() != uint64(2*n) {
		t.Fatalf("%d of %d pushes applied from templates", s.TemplatePushes(), 2*n)
	}
}

// areas counts the families of s kept as a skeleton and a value area.
func areas(s *Store) (withArea, all int) {
	for _, g := range s.Groups() {
		for _, f := range g.Families() {
			if _, area := f.cache.Stored(); len(area) > 0 {
				withArea++
			}
			all++
		}
	}
	return withArea, all
}

// TestAStoreWithoutAJournalKeepsTextPushesAsSkeletons: pushes applied from
// a template keep their families as skeletons and value areas in a store
// with no journal, the first making them, the next sharing them; a store
// with a journal keeps whole blocks, which its records copy as they are.
func TestAStoreWithoutAJournalKeepsTextPushesAsSkeletons(t *testing.T) {
	memory := New(Options{})
	pushBenchThrice(t, memory, 20)
	withArea, all := areas(memory)
	// Every pushed family and push_time_seconds; not
	// push_failure_time_seconds, built once with the group.
	if want := all - 20; withArea != want {
		t.Errorf("a store without a journal keeps %d of %d families as skeletons, want %d", withArea, all, want)
	}
	// The second push of each group from its template shared every
	// pushed family's skeleton (8 families of the bench payload).
	if got := memory.templates.sharedSkeletons.Load(); got != 20*8 {
		t.Errorf("%d families written beside a shared skeleton, want %d", got, 20*8)
	}

	journaled := New(Options{})
	journaled.SetJournal(&recordingLog{})
	pushBenchThrice(t, journaled, 20)
	if withArea, all := areas(journaled); withArea != 0 {
		t.Errorf("a journaled store keeps %d of %d families as skeletons, want none", withArea, all)
	}
}

// TestARecordOfASkeletonHoldsTheWholeBytes: a store kept as skeletons and
// value areas writes records (JournalOps, for an import) whose blocks
// hold the families' bytes, values and all, and a store restored from
// them serves the same bodies.
func TestARecordOfASkeletonHoldsTheWholeBytes(t *testing.T) {
	src := New(Options{})
	pushBenchThrice(t, src, 20)
	ops := testJournalOps(t, src)
	dst := New(Options{})
	for _, op := range ops {
		rec, err := groupcodec.Decode(op.Value)
		if err != nil {
			t.Fatal(err)
		}
		g := src.Group(recordKey(&rec))
		for _, rf := range rec.Families {
			got, err := s2.Decode(nil, rf.Packed)
			if err != nil {
				t.Fatal(err)
			}
			if want := metricsOf(t, g.families.get(rf.Name)); !bytes.Equal(got, want) {
				t.Errorf("group %s, family %s: the record's block holds\n%x\nwant\n%x", g.Key(), rf.Name, got, want)
			}
		}
		if err := dst.Restore(op.Key, op.Value); err != nil {
			t.Fatal(err)
		}
	}
	for _, enc := range []exposition.Encoding{exposition.EncodingText, exposition.EncodingOpenMetrics, exposition.EncodingProtobuf} {
		for _, g := range src.Groups() {
			for _, f := range g.Families() {
				want, err := render.Body(f, exposition.NewFormat(enc))
				if err != nil {
					t.Fatal(err)
				}
				got, err := render.Body(dst.Group(g.Key()).families.get(f.Name()), exposition.NewFormat(enc))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("group %s, family %s, %v: restored\n%s\nwant\n%s", g.Key(), f.Name(), enc, got, want)
				}
			}
		}
	}
}

// TestAPushFromItsTemplateSharesTheSkeleton: a push applied from its
// group's template keeps each family's skeleton block, the one the family
// it replaces holds, and writes only a new value area; the family it
// replaced, still held by a reader, keeps its own values.
func TestAPushFromItsTemplateSharesTheSkeleton(t *testing.T) {
	s := New(Options{})
	tp := textPusher{s: s, templates: true}
	k := groupkey.New(map[string]string{"job": payload.Job, "instance": "i0"})
	at := time.Unix(1_700_000_000, 0)
	var held []*Family
	var heldBytes [][]byte
	for seq := 1; seq <= 3; seq++ {
		if _, err := tp.push(t, k, Replace, payload.Text(0, seq), at.Add(time.Duration(seq)*time.Second)); err != nil {
			t.Fatal(err)
		}
		if seq == 2 {
			held = s.Group(k).Families()
			for _, f := range held {
				heldBytes = append(heldBytes, metricsOf(t, f))
			}
		}
	}
	shared := 0
	for i, before := range held {
		after := s.Group(k).families.get(before.Name())
		if before.Name() == PushFailureTimeName {
			continue // built once with the group, and kept
		}
		if after == before {
			t.Fatalf("family %s was not replaced by the third push", before.Name())
		}
		if got := metricsOf(t, before); !bytes.Equal(got, heldBytes[i]) {
			t.Errorf("family %s of the second push reads\n%x\nafter the third, want\n%x", before.Name(), got, heldBytes[i])
		}
		if bytes.Equal(metricsOf(t, after), heldBytes[i]) {
			t.Errorf("family %s holds the second push's values after the third", before.Name())
		}
		bs, bok := before.cache.Skeleton()
		as, aok := after.cache.Skeleton()
		if bok != aok {
			t.Errorf("family %s: kept as a skeleton %v before the third push, %v after", before.Name(), bok, aok)
			continue
		}
		if !bok {
			continue
		}
		bpb, barea := before.cache.Stored()
		apb, aarea := after.cache.Stored()
		if bs != as || &bpb[0] != &apb[0] || len(bpb) != len(apb) {
			t.Errorf("family %s: the third push copied the skeleton block instead of sharing it", before.Name())
		}
		if &barea[0] == &aarea[0] {
			t.Errorf("family %s: the third push shares the value area of the second", before.Name())
		}
		shared++
	}
	// The 8 pushed families and push_time_seconds.
	if shared != 9 {
		t.Errorf("%d families share their skeleton with the push before, want 9", shared)
	}
}
