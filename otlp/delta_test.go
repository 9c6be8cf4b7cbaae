package otlp

import (
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// at returns the time s seconds after an arbitrary origin.
func at(s int64) time.Time { return time.Unix(1_700_000_000+s, 0) }

// counterDelta is a delta family "done_total" with one point per value,
// labelled run=<label>, over the windows given as (start, end] seconds.
func counterDelta(label string, v float64, start, end int64) DeltaFamily {
	return DeltaFamily{
		Family: &dto.MetricFamily{Name: proto.String("done_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{{
			Label:   []*dto.LabelPair{{Name: proto.String("kind"), Value: proto.String(label)}},
			Counter: &dto.Counter{Value: proto.Float64(v)},
		}}},
		Windows: []Window{{Start: at(start), End: at(end)}},
	}
}

// sums applies requests in order, each against the states the previous
// ones left, as a store would keep them, and returns what is stored after
// the last (every family and state, unchanged ones included, the first
// reason and all resets) and the total skipped.
func sums(t *testing.T, requests ...[]DeltaFamily) (Accumulation, int) {
	t.Helper()
	stored := Accumulation{States: map[string][]byte{}}
	fams := map[string]*dto.MetricFamily{}
	skipped := 0
	for _, req := range requests {
		acc, err := AddDeltas(stored.States, req)
		if err != nil {
			t.Fatal(err)
		}
		skipped += acc.Skipped
		stored.Resets += acc.Resets
		if stored.Reason == "" {
			stored.Reason = acc.Reason
		}
		for name, st := range acc.States {
			stored.States[name] = st
		}
		for _, mf := range acc.Families {
			fams[mf.GetName()] = mf
		}
	}
	for _, name := range slices.Sorted(maps.Keys(fams)) {
		stored.Families = append(stored.Families, fams[name])
	}
	return stored, skipped
}

// counterValue returns the value of the series kind=label of the family.
func counterValue(t *testing.T, acc Accumulation, label string) float64 {
	t.Helper()
	for _, mf := range acc.Families {
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == "kind" && l.GetValue() == label {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no series kind=%s", label)
	return math.NaN()
}

func TestThreeBatchRunsAreSummedWhateverTheGapsBetweenThem(t *testing.T) {
	acc, skipped := sums(t,
		[]DeltaFamily{counterDelta("a", 2, 0, 10)},
		[]DeltaFamily{counterDelta("a", 3, 100, 110)},
		[]DeltaFamily{counterDelta("a", 4, 5000, 5001)},
	)
	if v := counterValue(t, acc, "a"); v != 9 || skipped != 0 {
		t.Errorf("value %v, skipped %d, want 9 and 0", v, skipped)
	}
	ct := acc.Families[0].Metric[0].Counter.CreatedTimestamp.AsTime()
	if !ct.Equal(at(0)) {
		t.Errorf("created %v, want the first window's start %v", ct, at(0))
	}
	if acc.Families[0].Metric[0].TimestampMs != nil {
		t.Error("the summed series carries a sample timestamp")
	}
}

func TestARetriedRequestAddsNothingAndIsReported(t *testing.T) {
	req := []DeltaFamily{counterDelta("a", 2, 0, 10)}
	acc, skipped := sums(t, req, req, req)
	if v := counterValue(t, acc, "a"); v != 2 || skipped != 2 {
		t.Errorf("value %v, skipped %d, want 2 and 2", v, skipped)
	}
	if acc.Reason == "" {
		t.Error("no reason for the skipped point")
	}
}

func TestAWindowOverlappingOneSummedIsNotAdded(t *testing.T) {
	for _, tc := range []struct {
		name       string
		start, end int64
		want       float64
	}{
		{"overlapping the end", 5, 15, 1},
		{"inside", 2, 3, 1},
		{"covering", -5, 50, 1},
		{"right after", 10, 20, 3},
		{"right before", -10, 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acc, _ := sums(t, []DeltaFamily{counterDelta("a", 1, 0, 10)}, []DeltaFamily{counterDelta("a", 2, tc.start, tc.end)})
			if v := counterValue(t, acc, "a"); v != tc.want {
				t.Errorf("value %v, want %v", v, tc.want)
			}
		})
	}
}

func TestSeriesAreSummedApartAndTheFamilyHoldsThemAll(t *testing.T) {
	acc, _ := sums(t, []DeltaFamily{counterDelta("a", 1, 0, 10)}, []DeltaFamily{counterDelta("b", 5, 0, 10)})
	if n := len(acc.Families[0].Metric); n != 2 {
		t.Fatalf("%d series, want both a and b", n)
	}
	if a, b := counterValue(t, acc, "a"), counterValue(t, acc, "b"); a != 1 || b != 5 {
		t.Errorf("a=%v b=%v, want 1 and 5", a, b)
	}
}

func TestPointsOfOneRequestAreCheckedAgainstEachOther(t *testing.T) {
	d := counterDelta("a", 1, 0, 10)
	d.Family.Metric = append(d.Family.Metric, proto.Clone(d.Family.Metric[0]).(*dto.Metric), proto.Clone(d.Family.Metric[0]).(*dto.Metric))
	d.Windows = append(d.Windows, Window{Start: at(10), End: at(20)}, Window{Start: at(0), End: at(10)})
	acc, skipped := sums(t, []DeltaFamily{d})
	if v := counterValue(t, acc, "a"); v != 2 || skipped != 1 {
		t.Errorf("value %v, skipped %d, want 2 and 1", v, skipped)
	}
}

func TestTheWindowListStaysBoundedAndWhatItForgotCountsAsSummed(t *testing.T) {
	var reqs [][]DeltaFamily
	// Windows with gaps, so none merge: more than MaxWindows of them.
	for i := int64(0); i < MaxWindows+5; i++ {
		reqs = append(reqs, []DeltaFamily{counterDelta("a", 1, i*10, i*10+5)})
	}
	reqs = append(reqs, []DeltaFamily{counterDelta("a", 100, 6, 7)}) // in a forgotten gap
	acc, skipped := sums(t, reqs...)
	if v := counterValue(t, acc, "a"); v != MaxWindows+5 || skipped != 1 {
		t.Errorf("value %v, skipped %d, want %d and 1", v, skipped, MaxWindows+5)
	}
	fs, err := decodeState(acc.States["done_total"], dto.MetricType_COUNTER)
	if err != nil {
		t.Fatal(err)
	}
	for _, ss := range fs.series {
		if len(ss.windows.list) > MaxWindows {
			t.Errorf("%d windows kept, want at most %d", len(ss.windows.list), MaxWindows)
		}
	}
}

func TestContiguousWindowsMergeIntoOneInterval(t *testing.T) {
	var reqs [][]DeltaFamily
	for i := int64(0); i < 100; i++ {
		reqs = append(reqs, []DeltaFamily{counterDelta("a", 1, i*10, i*10+10)})
	}
	acc, _ := sums(t, reqs...)
	fs, err := decodeState(acc.States["done_total"], dto.MetricType_COUNTER)
	if err != nil {
		t.Fatal(err)
	}
	for _, ss := range fs.series {
		if len(ss.windows.list) != 1 || ss.windows.floor != 0 {
			t.Errorf("windows %+v floor %d, want one interval and no floor", ss.windows.list, ss.windows.floor)
		}
	}
	if v := counterValue(t, acc, "a"); v != 100 {
		t.Errorf("value %v, want 100", v)
	}
}

// classicDelta is a delta histogram "h_seconds" with the given bounds and
// per-bucket cumulative counts.
func classicDelta(bounds []float64, cum []uint64, sum float64, start, end int64) DeltaFamily {
	h := &dto.Histogram{SampleCount: proto.Uint64(cum[len(cum)-1]), SampleSum: proto.Float64(sum)}
	for i, b := range bounds {
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(b), CumulativeCount: proto.Uint64(cum[i])})
	}
	return DeltaFamily{
		Family:  &dto.MetricFamily{Name: proto.String("h_seconds"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{Histogram: h}}},
		Windows: []Window{{Start: at(start), End: at(end)}},
	}
}

func TestExplicitHistogramsAddBucketByBucketAndRestartWhenBoundsChange(t *testing.T) {
	acc, _ := sums(t,
		[]DeltaFamily{classicDelta([]float64{1, 2}, []uint64{1, 3}, 4, 0, 10)},
		[]DeltaFamily{classicDelta([]float64{1, 2}, []uint64{2, 2}, 1, 10, 20)},
	)
	h := acc.Families[0].Metric[0].Histogram
	if h.GetSampleCount() != 5 || h.GetSampleSum() != 5 || h.Bucket[0].GetCumulativeCount() != 3 || h.Bucket[1].GetCumulativeCount() != 5 {
		t.Errorf("summed histogram %v, want count 5 sum 5 buckets 3, 5", h)
	}
	acc, _ = sums(t,
		[]DeltaFamily{classicDelta([]float64{1, 2}, []uint64{1, 3}, 4, 0, 10)},
		[]DeltaFamily{classicDelta([]float64{1, 5}, []uint64{2, 2}, 1, 10, 20)},
	)
	h = acc.Families[0].Metric[0].Histogram
	if acc.Resets != 1 || h.GetSampleCount() != 2 || h.Bucket[1].GetUpperBound() != 5 {
		t.Errorf("resets %d, histogram %v: want a restart from the new point", acc.Resets, h)
	}
	if ct := h.CreatedTimestamp.AsTime(); !ct.Equal(at(10)) {
		t.Errorf("created %v after the restart, want %v", ct, at(10))
	}
}

// nativeDelta is a delta native histogram with positive buckets counts
// starting at index first, at schema.
func nativeDelta(schema int32, first int32, counts []int64, start, end int64) DeltaFamily {
	h := &dto.Histogram{Schema: proto.Int32(schema), ZeroThreshold: proto.Float64(0), ZeroCount: proto.Uint64(1), SampleSum: proto.Float64(10)}
	var total uint64 = 1
	prev := int64(0)
	for _, c := range counts {
		h.PositiveDelta = append(h.PositiveDelta, c-prev)
		prev = c
		total += uint64(c)
	}
	h.PositiveSpan = []*dto.BucketSpan{{Offset: proto.Int32(first), Length: proto.Uint32(uint32(len(counts)))}}
	h.SampleCount = proto.Uint64(total)
	return DeltaFamily{
		Family:  &dto.MetricFamily{Name: proto.String("n_seconds"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{Histogram: h}}},
		Windows: []Window{{Start: at(start), End: at(end)}},
	}
}

func TestExponentialHistogramsMergeAtTheLowerScale(t *testing.T) {
	// Schema 1 buckets 1..4 (counts 1,2,3,4) fall in schema 0 buckets 1
	// (1+2) and 2 (3+4); schema 0 buckets 1, 2 add 10 and 20.
	acc, _ := sums(t,
		[]DeltaFamily{nativeDelta(1, 1, []int64{1, 2, 3, 4}, 0, 10)},
		[]DeltaFamily{nativeDelta(0, 1, []int64{10, 20}, 10, 20)},
	)
	h := acc.Families[0].Metric[0].Histogram
	got := bucketCounts(h.PositiveSpan, h.PositiveDelta, h.GetSchema(), h.GetSchema())
	if h.GetSchema() != 0 || got[1] != 13 || got[2] != 27 || len(got) != 2 {
		t.Errorf("schema %d buckets %v, want schema 0 with 1:13 2:27", h.GetSchema(), got)
	}
	if h.GetSampleCount() != 10+1+30+1 || h.GetZeroCount() != 2 || h.GetSampleSum() != 20 {
		t.Errorf("count %d zero %d sum %v, want 42, 2, 20", h.GetSampleCount(), h.GetZeroCount(), h.GetSampleSum())
	}
}

func TestSpansAndDeltasRoundTripThroughBucketCounts(t *testing.T) {
	counts := map[int32]uint64{-3: 1, -2: 4, 0: 2, 5: 7, 6: 1, 20: 3}
	spans, deltas := spansDeltas(counts)
	got := bucketCounts(spans, deltas, 2, 2)
	if len(got) != len(counts) {
		t.Fatalf("buckets %v, want %v", got, counts)
	}
	for i, c := range counts {
		if got[i] != c {
			t.Errorf("bucket %d: %d, want %d", i, got[i], c)
		}
	}
}

func TestAStateOfAnotherTypeOrCorruptStartsTheSumAgain(t *testing.T) {
	for name, st := range map[string][]byte{"corrupt": {9, 9, 9}, "truncated": {stateVersion, 0, 5}} {
		acc, err := AddDeltas(map[string][]byte{"done_total": st}, []DeltaFamily{counterDelta("a", 2, 0, 10)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if v := counterValue(t, acc, "a"); v != 2 {
			t.Errorf("%s: value %v, want 2", name, v)
		}
	}
}

func TestAPointWithoutATimestampIsNotSummed(t *testing.T) {
	d := counterDelta("a", 5, 0, 10)
	d.Windows[0] = Window{}
	acc, skipped := sums(t, []DeltaFamily{counterDelta("a", 1, 0, 10)}, []DeltaFamily{d})
	if v := counterValue(t, acc, "a"); v != 1 || skipped != 1 || !strings.Contains(acc.Reason, "no timestamp") {
		t.Errorf("value %v, skipped %d, reason %q: want 1, 1 and the reason", v, skipped, acc.Reason)
	}
}
