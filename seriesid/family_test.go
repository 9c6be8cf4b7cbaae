package seriesid

import (
	"hash/maphash"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/exposition"
)

// identityFamilies are families whose identity the tests derive both ways:
// legacy and UTF-8 names, empty label values, exemplars, no labels.
func identityFamilies() []*dto.MetricFamily {
	long := strings.Repeat("v", 100)
	counter := func(v float64, labels []*dto.LabelPair, exemplar []*dto.LabelPair) *dto.Metric {
		m := &dto.Metric{Label: labels, Counter: &dto.Counter{Value: proto.Float64(v)}}
		if exemplar != nil {
			m.Counter.Exemplar = &dto.Exemplar{Label: exemplar, Value: proto.Float64(v)}
		}
		return m
	}
	gauge := func(labels []*dto.LabelPair) *dto.Metric {
		return &dto.Metric{Label: labels, Gauge: &dto.Gauge{Value: proto.Float64(1)}}
	}
	histogram := func(labels, exemplar []*dto.LabelPair) *dto.Metric {
		return &dto.Metric{Label: labels, Histogram: &dto.Histogram{SampleCount: proto.Uint64(1), SampleSum: proto.Float64(1),
			Bucket: []*dto.Bucket{{UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(1),
				Exemplar: &dto.Exemplar{Label: exemplar, Value: proto.Float64(1)}}}}}
	}
	fam := func(name string, typ dto.MetricType, ms ...*dto.Metric) *dto.MetricFamily {
		return &dto.MetricFamily{Name: proto.String(name), Type: typ.Enum(), Metric: ms}
	}
	return []*dto.MetricFamily{
		fam("jobs_total", dto.MetricType_COUNTER,
			counter(1, pairs("instance", "", "job", "batch", "path", long), pairs("trace_id", "abc")),
			counter(2, pairs("instance", "a", "job", "batch"), nil)),
		fam("jobs_total", dto.MetricType_COUNTER, counter(1, pairs("job", "batch"), pairs("trace.id", "abc"))),
		fam("no_labels", dto.MetricType_GAUGE, gauge(nil), gauge(pairs("a", ""))),
		fam("temperature.celsius", dto.MetricType_GAUGE, gauge(pairs("job", "j"))),
		fam("room", dto.MetricType_GAUGE, gauge(pairs("job", "j", "room.name", "kitchen")), gauge(pairs("job", "j", "über", "x"))),
		fam("latency_seconds", dto.MetricType_HISTOGRAM, histogram(pairs("job", "j", "le_x", "1"), pairs("span", "s"))),
		fam("latency_seconds", dto.MetricType_HISTOGRAM, histogram(pairs("job", "j"), pairs("span.id", "s"))),
		fam("named", dto.MetricType_GAUGE, gauge(pairs("__name__", "other.name", "job", "j"))),
	}
}

// familyFromBody derives the identity of mf from its protobuf body, as a
// store restoring it does.
func familyFromBody(t *testing.T, f *Family, seed maphash.Seed, mf *dto.MetricFamily, labelNames bool) (series []uint64, plain bool, names []string) {
	t.Helper()
	body, err := exposition.AppendBody(nil, mf, exposition.NewFormat(exposition.EncodingProtobuf))
	if err != nil {
		t.Fatal(err)
	}
	f.Start(seed, mf.GetName(), labelNames)
	if err := exposition.ProtobufBodyLabels(body, func(labels []exposition.LabelBytes) {
		series = append(series, f.SeriesBytes(labels))
	}); err != nil {
		t.Fatal(err)
	}
	return series, f.PlainBody(mf.GetType(), body), f.LabelNames()
}

// familyFromPush derives the identity of mf from its label pairs, as a
// push does.
func familyFromPush(f *Family, seed maphash.Seed, mf *dto.MetricFamily, labelNames bool) (series []uint64, plain bool, names []string) {
	f.Start(seed, mf.GetName(), labelNames)
	for _, m := range mf.Metric {
		series = append(series, f.Series(m.Label))
	}
	return series, f.Plain(mf), f.LabelNames()
}

func TestAFamilyReadFromItsProtobufBodyHasThePushedIdentity(t *testing.T) {
	seed := maphash.MakeSeed()
	// One Family for every derivation, as a push or a record reuses it.
	var f Family
	for _, labelNames := range []bool{false, true} {
		for _, mf := range identityFamilies() {
			pushed, pushedPlain, pushedNames := familyFromPush(&f, seed, mf, labelNames)
			stored, storedPlain, storedNames := familyFromBody(t, &f, seed, mf, labelNames)
			if !slices.Equal(pushed, stored) {
				t.Errorf("%s (label names %v): series hashes from the body %x, from the push %x", mf.GetName(), labelNames, stored, pushed)
			}
			if pushedPlain != storedPlain {
				t.Errorf("%s (label names %v): plain from the body %v, from the push %v", mf.GetName(), labelNames, storedPlain, pushedPlain)
			}
			if !slices.Equal(pushedNames, storedNames) {
				t.Errorf("%s (label names %v): label names from the body %q, from the push %q", mf.GetName(), labelNames, storedNames, pushedNames)
			}
		}
	}
}

func TestASeriesHashesItsNameThenEachLabelWithAValue(t *testing.T) {
	seed := maphash.MakeSeed()
	var f Family
	f.Start(seed, "m", false)
	got := f.Series(pairs("a", "1", "b", "", "c", "23"))
	// The framing the index has always compared: a change to it would
	// make a stored family's series differ from the pushed ones'.
	want := maphash.String(seed, "m\xffa\xff1\xffc\xff23")
	if got != want {
		t.Errorf("series hash %x, want %x", got, want)
	}
}

func TestFamilySeriesHashesKeepSeriesApart(t *testing.T) {
	tests := []struct {
		name   string
		a, b   []*dto.LabelPair
		sameID bool
	}{
		{"an empty label value is the same as no label", pairs("a", ""), nil, true},
		{"different values are different series", pairs("a", "1"), pairs("a", "2"), false},
		{"a label's name and value are kept apart", pairs("a", "bc"), pairs("ab", "c"), false},
		{"two labels are not one", pairs("a", "1", "b", "2"), pairs("a", "1b2"), false},
	}
	seed := maphash.MakeSeed()
	var f Family
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.Start(seed, "m", false)
			a, b := f.Series(tt.a), f.Series(tt.b)
			if (a == b) != tt.sameID {
				t.Errorf("%s and %s hash alike: %v, want %v", String("m", tt.a), String("m", tt.b), a == b, tt.sameID)
			}
		})
	}
}

func TestAFamilyIsPlainWhenEveryNameInItIsALegacyName(t *testing.T) {
	seed := maphash.MakeSeed()
	var f Family
	for _, mf := range identityFamilies() {
		_, plain, names := familyFromPush(&f, seed, mf, true)
		if want := exposition.LegacyNames(mf); plain != want {
			t.Errorf("%s: plain %v, exposition.LegacyNames %v", mf.GetName(), plain, want)
		}
		if want := labelNamesOf(mf); !slices.Equal(names, want) {
			t.Errorf("%s: label names %q, want %q", mf.GetName(), names, want)
		}
	}
}

func TestLabelNamesAreCollectedOnlyWhenAsked(t *testing.T) {
	var f Family
	f.Start(maphash.MakeSeed(), "m", false)
	f.Series(pairs("b", "1", "a", "2"))
	if names := f.LabelNames(); names != nil {
		t.Errorf("label names %q without asking", names)
	}
	f.Start(maphash.MakeSeed(), "m", true)
	f.Series(pairs("b", "1", "a", "2"))
	f.Series(pairs("c", "1", "b", "2"))
	names := f.LabelNames()
	if want := []string{"a", "b", "c"}; !slices.Equal(names, want) {
		t.Errorf("label names %q, want %q", names, want)
	}
	// The names are the caller's: the next family does not change them.
	f.Start(maphash.MakeSeed(), "n", true)
	f.Series(pairs("z", "1"))
	if want := []string{"a", "b", "c"}; !slices.Equal(names, want) {
		t.Errorf("label names %q after the next family, want %q", names, want)
	}
}

func TestCollectedLabelNamesDoNotAliasTheBody(t *testing.T) {
	var f Family
	f.Start(maphash.MakeSeed(), "m", true)
	name := []byte("room")
	f.SeriesBytes([]exposition.LabelBytes{{Name: name, Value: []byte("1")}})
	copy(name, "XXXX")
	if names := f.LabelNames(); !slices.Equal(names, []string{"room"}) {
		t.Errorf("label names %q after the body changed, want [room]", names)
	}
}

func TestFamilySeriesAllocatesNothing(t *testing.T) {
	var f Family
	seed := maphash.MakeSeed()
	labels := pairs("instance", "i1", "job", "batch", "path", strings.Repeat("v", 100))
	body := []exposition.LabelBytes{{Name: []byte("job"), Value: []byte(strings.Repeat("v", 100))}}
	f.Start(seed, "m", true)
	f.Series(labels)
	f.SeriesBytes(body)
	if n := testing.AllocsPerRun(100, func() { f.Series(labels) }); n != 0 {
		t.Errorf("Series allocates %v times per series", n)
	}
	if n := testing.AllocsPerRun(100, func() { f.SeriesBytes(body) }); n != 0 {
		t.Errorf("SeriesBytes allocates %v times per series", n)
	}
	if n := testing.AllocsPerRun(100, func() { f.Start(seed, "m", false); f.Series(labels) }); n != 0 {
		t.Errorf("a family of one series allocates %v times", n)
	}
}

// BenchmarkFamilySeries measures deriving the identity of one series of
// the bench payload's shape (three labels) from label pairs, as a push
// does.
func BenchmarkFamilySeries(b *testing.B) {
	labels := pairs("instance", "i17", "job", "batch", "le", "0.25")
	seed := maphash.MakeSeed()
	var f Family
	f.Start(seed, "request_duration_seconds_bucket", false)
	b.ReportAllocs()
	for b.Loop() {
		f.Series(labels)
	}
}

// labelNamesOf lists the distinct label names of mf's metrics, sorted: what
// a Family collects, written the plain way.
func labelNamesOf(mf *dto.MetricFamily) []string {
	var names []string
	for _, m := range mf.GetMetric() {
		for _, lp := range m.GetLabel() {
			if !slices.Contains(names, lp.GetName()) {
				names = append(names, lp.GetName())
			}
		}
	}
	slices.Sort(names)
	return names
}
