package otlp

import (
	"bytes"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// fromSource is d with every window's source set to src.
func fromSource(d DeltaFamily, src uint64) DeltaFamily {
	d.Windows = append([]Window(nil), d.Windows...)
	for i := range d.Windows {
		d.Windows[i].Source = src
	}
	return d
}

func TestOverlappingWindowsOfTwoSourcesAreBothSummed(t *testing.T) {
	acc, skipped := sums(t,
		[]DeltaFamily{fromSource(counterDelta("a", 2, 0, 10), 1)},
		[]DeltaFamily{fromSource(counterDelta("a", 3, 5, 15), 2)},
		[]DeltaFamily{fromSource(counterDelta("a", 4, 0, 10), 3)},
	)
	if v := counterValue(t, acc, "a"); v != 9 || skipped != 0 {
		t.Errorf("value %v, skipped %d, want 9 and 0: the processes ran at once, none retried", v, skipped)
	}
}

func TestARetryOfOneSourceIsRefusedBesideAnotherSourcesWindow(t *testing.T) {
	acc, skipped := sums(t,
		[]DeltaFamily{fromSource(counterDelta("a", 2, 0, 10), 1)},
		[]DeltaFamily{fromSource(counterDelta("a", 3, 0, 10), 2)},
		[]DeltaFamily{fromSource(counterDelta("a", 2, 0, 10), 1)},
		[]DeltaFamily{fromSource(counterDelta("a", 2, 5, 10), 2)},
	)
	if v := counterValue(t, acc, "a"); v != 5 || skipped != 2 {
		t.Errorf("value %v, skipped %d, want 5 and 2", v, skipped)
	}
	if !strings.Contains(acc.Reason, "overlaps a window this process summed already (a retried export)") {
		t.Errorf("reason %q does not say the window is a retry of its process", acc.Reason)
	}
}

func TestWindowsOfOneSourceMergeAndOthersStayApart(t *testing.T) {
	var ws windows
	ws.add(interval{start: 0, end: 10, source: 1})
	ws.add(interval{start: 5, end: 15, source: 2})
	ws.add(interval{start: 10, end: 20, source: 1})
	ws.add(interval{start: -10, end: 0, source: 1})
	want := []interval{{start: -10, end: 20, source: 1}, {start: 5, end: 15, source: 2}}
	if len(ws.list) != len(want) {
		t.Fatalf("intervals %+v, want %+v", ws.list, want)
	}
	for i := range want {
		if ws.list[i] != want[i] {
			t.Errorf("intervals %+v, want %+v", ws.list, want)
		}
	}
}

func TestTheWindowCapCountsEverySourceAndTheFloorRefusesAnyOlderWindow(t *testing.T) {
	var reqs [][]DeltaFamily
	// One run per source, each overlapping the next: a batch job whose
	// every run is a new process.
	const runs = MaxWindows + 8
	for i := int64(0); i < runs; i++ {
		reqs = append(reqs, []DeltaFamily{fromSource(counterDelta("a", 1, i*10, i*10+15), uint64(100+i))})
	}
	// A new source's window ending before the oldest remembered one.
	reqs = append(reqs, []DeltaFamily{fromSource(counterDelta("a", 100, 0, 20), 7)})
	acc, skipped := sums(t, reqs...)
	if v := counterValue(t, acc, "a"); v != runs || skipped != 1 {
		t.Errorf("value %v, skipped %d, want %d and 1", v, skipped, runs)
	}
	if !strings.Contains(acc.Reason, "older than") {
		t.Errorf("reason %q does not say the window is older than the state remembers", acc.Reason)
	}
	fs, err := decodeState(acc.States["done_total"], dto.MetricType_COUNTER)
	if err != nil {
		t.Fatal(err)
	}
	for _, ss := range fs.series {
		if len(ss.windows.list) != MaxWindows {
			t.Errorf("%d intervals kept, want %d", len(ss.windows.list), MaxWindows)
		}
		if want := int64(8*10+5) * 1e9; ss.windows.floor-at(0).UnixNano() != want {
			t.Errorf("floor %d after the origin, want %d (the end of the last dropped run)", ss.windows.floor-at(0).UnixNano(), want)
		}
	}
}

func TestTheStateRoundTripsSourcesAndTheNewestTime(t *testing.T) {
	acc, _ := sums(t,
		[]DeltaFamily{fromSource(counterDelta("a", 2, 0, 10), 1<<63+5)},
		[]DeltaFamily{fromSource(counterDelta("a", 2, 5, 30), 9)},
	)
	st := acc.States["done_total"]
	fs, err := decodeState(st, dto.MetricType_COUNTER)
	if err != nil {
		t.Fatal(err)
	}
	ss := fs.series[seriesKey(acc.Families[0].Metric[0])]
	if len(ss.windows.list) != 2 || ss.windows.list[0].source != 1<<63+5 || ss.windows.list[1].source != 9 {
		t.Errorf("intervals %+v, want both sources", ss.windows.list)
	}
	if tm, ok := FamilyTime(st); !ok || !tm.Equal(at(30)) {
		t.Errorf("FamilyTime %v %v, want the newest window end %v", tm, ok, at(30))
	}
	again, err := fs.encode()
	if err != nil || !bytes.Equal(again, st) {
		t.Errorf("re-encoded state differs (%v)", err)
	}
}

func TestAStateOfAnUnknownVersionIsRefusedAndTheSumStartsAgain(t *testing.T) {
	acc, _ := sums(t, []DeltaFamily{counterDelta("a", 2, 0, 10)})
	st := bytes.Clone(acc.States["done_total"])
	st[0] = 1
	if _, err := decodeState(st, dto.MetricType_COUNTER); err == nil || !strings.Contains(err.Error(), "version 1") {
		t.Errorf("decoding a version 1 state: %v, want an error naming the version", err)
	}
	if _, ok := FamilyTime(st); ok {
		t.Error("FamilyTime read a time from a state of an unknown version")
	}
	next, err := AddDeltas(map[string][]byte{"done_total": st}, []DeltaFamily{counterDelta("a", 5, 0, 10)})
	if err != nil {
		t.Fatal(err)
	}
	if v := counterValue(t, next, "a"); v != 5 {
		t.Errorf("value %v, want 5: the unreadable state is dropped", v)
	}
}

func TestARetryLeavesTheFamilyOutSoItsStateIsNotRebuilt(t *testing.T) {
	req := []DeltaFamily{counterDelta("a", 2, 0, 10)}
	first, err := AddDeltas(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := AddDeltas(first.States, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Families) != 0 || len(again.States) != 0 || again.Skipped != 1 {
		t.Errorf("a retry gave %d families, %d states, %d skipped: want none, none and 1", len(again.Families), len(again.States), again.Skipped)
	}
}

func TestAFamilyStateKeepsTheNewestTime(t *testing.T) {
	st := AppendFamilyState(nil, nil, dto.MetricType_GAUGE, at(20))
	if tm, ok := FamilyTime(st); !ok || !tm.Equal(at(20)) {
		t.Fatalf("FamilyTime %v %v, want %v", tm, ok, at(20))
	}
	if tm, _ := FamilyTime(AppendFamilyState(nil, st, dto.MetricType_GAUGE, at(10))); !tm.Equal(at(20)) {
		t.Errorf("time %v after an older point, want it kept at %v", tm, at(20))
	}
	if _, ok := FamilyTime(AppendFamilyState(nil, nil, dto.MetricType_GAUGE, time.Time{})); ok {
		t.Error("a family of points without timestamps has a time")
	}
	if _, ok := FamilyTime(nil); ok {
		t.Error("no state has a time")
	}
	two := AppendFamilyState(AppendFamilyState(nil, nil, dto.MetricType_GAUGE, at(1)), nil, dto.MetricType_COUNTER, at(2))
	if tm, _ := FamilyTime(two[len(st):]); len(two) != 2*len(st) || !tm.Equal(at(2)) {
		t.Errorf("the second of two appended states: %v in %d bytes", tm, len(two))
	}
}

func TestTheTranslationGivesDeltasTheirSourceAndFamiliesTheirNewestTime(t *testing.T) {
	md := pmetric.NewMetrics()
	ms := addResource(md, "service.name", "svc", "service.instance.id", "3f1c")
	addSum(ms, "jobs", "", true, pmetric.AggregationTemporalityDelta, 4)
	addGauge(ms, "g", "", 1)
	newer := addGauge(ms, "h", "", 1)
	newer.SetTimestamp(testTS + 5e9)
	ms = addResource(md, "service.name", "svc")
	addSum(ms, "jobs", "", true, pmetric.AggregationTemporalityDelta, 4)
	g := translateOne(t, md, nil)
	w := g.Deltas[0].Windows
	if len(w) != 2 || w[0].Source == 0 || w[1].Source != 0 {
		t.Errorf("windows %+v: want the instance's source, then 0 for a resource without one", w)
	}
	if len(g.Times) != len(g.Families) {
		t.Fatalf("%d times for %d families", len(g.Times), len(g.Families))
	}
	for i, mf := range g.Families {
		want := testTS.AsTime()
		if name := mf.GetName(); name == "h" || name == targetInfoName {
			want = (testTS + 5e9).AsTime()
		}
		if !g.Times[i].Equal(want) {
			t.Errorf("family %s: time %v, want %v", mf.GetName(), g.Times[i], want)
		}
	}
	md2 := pmetric.NewMetrics()
	addSum(addResource(md2, "service.name", "svc", "service.instance.id", "3f1c"), "jobs", "", true, pmetric.AggregationTemporalityDelta, 4)
	if again := translateOne(t, md2, nil).Deltas[0].Windows[0].Source; again != w[0].Source {
		t.Errorf("source %x, then %x for the same instance: not stable", w[0].Source, again)
	}
}
