package store

import (
	"testing"
	"unique"

	dto "github.com/prometheus/client_model/go"
)

// TestCounterpartsFindsTheFamilyOfEachName: counterparts pairs each family
// with the one of the same name in the other set, whether the two share
// their meta (a family and the one that replaced it) or only their name
// (another HELP text), and finds nil for a name the other set lacks.
func TestCounterpartsFindsTheFamilyOfEachName(t *testing.T) {
	fam := func(name, help string) *Family {
		return &Family{meta: unique.Make(familyMeta{name: name, help: help, typ: dto.MetricType_GAUGE})}
	}
	a1, b1 := fam("a", "A."), fam("b", "B.")
	set := func(fs ...*Family) familySet {
		var s familySet
		for _, f := range fs {
			s.put(f)
		}
		return s
	}
	left := set(a1, b1, fam("c", "C."), fam("e", "E."), fam("push_time_seconds", "T."))
	right := set(fam("a", "A."), fam("b", "other help"), fam("d", "D."), fam("e", "E."), fam("push_time_seconds", "T."), fam("z", "Z."))
	var buf [8]*Family
	got := counterparts(left, right, buf[:])
	if len(got) != len(left) {
		t.Fatalf("%d counterparts for %d families", len(got), len(left))
	}
	for i, f := range left {
		if want := right.get(f.Name()); got[i] != want {
			t.Errorf("family %s: counterpart %p, want %p", f.Name(), got[i], want)
		}
	}
	if got := counterparts(right, left, buf[:]); got[1] != b1 || got[2] != nil || got[5] != nil {
		t.Errorf("counterparts the other way: %v", got)
	}
}
