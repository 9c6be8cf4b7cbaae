package gobfile

import (
	"bytes"
	"encoding/gob"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// The reference Pushgateway's own type names, written independently here,
// to build a file the way the reference does rather than through Write.
type (
	GroupingKeyToMetricGroup         map[string]MetricGroup
	NameToTimestampedMetricFamilyMap map[string]TimestampedMetricFamily
	MetricGroup                      struct {
		Labels  map[string]string
		Metrics NameToTimestampedMetricFamilyMap
	}
	TimestampedMetricFamily struct {
		Timestamp            time.Time
		GobbableMetricFamily *GobbableMetricFamily
	}
	GobbableMetricFamily dto.MetricFamily
)

func (m *GobbableMetricFamily) GobEncode() ([]byte, error) {
	return proto.Marshal((*dto.MetricFamily)(m))
}

func (m *GobbableMetricFamily) GobDecode(b []byte) error {
	return proto.Unmarshal(b, (*dto.MetricFamily)(m))
}

func gauge(name string, labels map[string]string, v float64) *dto.MetricFamily {
	m := &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(v)}}
	for _, n := range []string{"instance", "job", "zone"} {
		if val, ok := labels[n]; ok {
			m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(n), Value: proto.String(val)})
		}
	}
	return &dto.MetricFamily{Name: proto.String(name), Help: proto.String(name + " help"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{m}}
}

func histogram(name string) *dto.MetricFamily {
	return &dto.MetricFamily{
		Name: proto.String(name), Type: dto.MetricType_HISTOGRAM.Enum(),
		Metric: []*dto.Metric{{Histogram: &dto.Histogram{
			SampleCount: proto.Uint64(3), SampleSum: proto.Float64(1.5),
			Bucket: []*dto.Bucket{{UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(2)}},
			// Native histogram fields must survive too.
			Schema: proto.Int32(3), ZeroThreshold: proto.Float64(1e-128),
			PositiveSpan: []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(2)}}, PositiveDelta: []int64{1, 1},
		}}},
	}
}

func sameGroups(t *testing.T, got, want []Group) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d groups, want %d", len(got), len(want))
	}
	for i := range want {
		if canonicalKey(got[i].Labels) != canonicalKey(want[i].Labels) {
			t.Errorf("group %d labels = %v, want %v", i, got[i].Labels, want[i].Labels)
		}
		if len(got[i].Families) != len(want[i].Families) {
			t.Fatalf("group %v: %d families, want %d", want[i].Labels, len(got[i].Families), len(want[i].Families))
		}
		for k, wf := range want[i].Families {
			gf := got[i].Families[k]
			if !gf.LastPush.Equal(wf.LastPush) {
				t.Errorf("group %v family %s: LastPush %v, want %v", want[i].Labels, wf.Family.GetName(), gf.LastPush, wf.LastPush)
			}
			if !proto.Equal(gf.Family, wf.Family) {
				t.Errorf("group %v family: got %v, want %v", want[i].Labels, gf.Family, wf.Family)
			}
		}
	}
}

func TestWriteThenReadReturnsTheSameGroupsSorted(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
	a := map[string]string{"job": "a", "instance": ""}
	b := map[string]string{"job": "b", "zone": "eu/west"}
	in := []Group{ // deliberately not in key order
		{Labels: b, Families: []Family{{LastPush: t0, Family: histogram("latency_seconds")}}},
		{Labels: a, Families: []Family{
			{LastPush: t0.Add(time.Second), Family: gauge("up", a, 1)},
			{LastPush: t0, Family: gauge("queue_depth", a, 7)},
		}},
		{Labels: map[string]string{"job": "a"}, Families: []Family{}},
	}
	var buf bytes.Buffer
	if err := Write(&buf, in); err != nil {
		t.Fatal(err)
	}
	if !Sniff(buf.Bytes()[:min(SniffLen, buf.Len())]) {
		t.Error("Sniff does not recognise Write's output")
	}
	got, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := []Group{ // sorted by canonical key ("instance…" < "job…"), families by name
		{Labels: a, Families: []Family{in[1].Families[1], in[1].Families[0]}},
		{Labels: map[string]string{"job": "a"}},
		in[0],
	}
	sameGroups(t, got, want)
}

func TestReadDecodesAFileWithTheReferenceTypesAndPushTimes(t *testing.T) {
	pushed := time.Date(2025, 1, 2, 3, 4, 5, 600000000, time.UTC)
	labels := map[string]string{"job": "backup", "instance": "db1"}
	pushTime := gauge("push_time_seconds", labels, float64(pushed.UnixNano())/1e9)
	pushTime.Help = proto.String("Last Unix time when changing this group in the Pushgateway succeeded.")
	failTime := gauge("push_failure_time_seconds", labels, 0)
	failTime.Help = proto.String("Last Unix time when changing this group in the Pushgateway failed.")
	file := GroupingKeyToMetricGroup{
		"instance\xffdb1\xffjob\xffbackup": {
			Labels: labels,
			Metrics: NameToTimestampedMetricFamilyMap{
				"backup_last_success": {Timestamp: pushed, GobbableMetricFamily: (*GobbableMetricFamily)(gauge("backup_last_success", labels, 1.7e9))},
				"push_time_seconds":   {Timestamp: pushed, GobbableMetricFamily: (*GobbableMetricFamily)(pushTime)},
				"push_failure_time_seconds": {
					Timestamp: pushed, GobbableMetricFamily: (*GobbableMetricFamily)(failTime),
				},
			},
		},
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(file); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte("GroupingKeyToMetricGroup")) {
		t.Fatal("test file does not carry the reference type names")
	}
	if !Sniff(buf.Bytes()[:min(SniffLen, buf.Len())]) {
		t.Error("Sniff does not recognise a file written with the reference types")
	}
	got, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	sameGroups(t, got, []Group{{Labels: labels, Families: []Family{
		{LastPush: pushed, Family: gauge("backup_last_success", labels, 1.7e9)},
		{LastPush: pushed, Family: failTime},
		{LastPush: pushed, Family: pushTime},
	}}})
	if v := got[0].Families[2].Family.GetMetric()[0].GetGauge().GetValue(); v != 1735787045.6 {
		t.Errorf("push_time_seconds = %v, want 1735787045.6", v)
	}
}

func TestReadRejectsWhatIsNotAReferenceFile(t *testing.T) {
	var other bytes.Buffer
	gob.NewEncoder(&other).Encode(map[string]int{"a": 1})
	var valid bytes.Buffer
	Write(&valid, []Group{{Labels: map[string]string{"job": "x"}, Families: []Family{{Family: gauge("up", nil, 1)}}}})
	tests := []struct {
		name  string
		input []byte
	}{
		{"an empty file is an error, not an empty store", nil},
		{"text is an error", []byte("# HELP up\nup 1\n")},
		{"a pushgate journal is an error", []byte("\x89PGJ\r\n\x1a\n\x01\x00\x00\x00\x00\x00\x00\x00")},
		{"a gob stream of another type is an error", other.Bytes()},
		{"a truncated file is an error", valid.Bytes()[:valid.Len()-5]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			groups, err := Read(bytes.NewReader(tt.input))
			if err == nil {
				t.Fatalf("Read returned %d groups and no error", len(groups))
			}
			if !strings.HasPrefix(err.Error(), "gobfile: ") {
				t.Errorf("error %q does not say where it comes from", err)
			}
		})
	}
}

func TestSniffTellsReferenceFilesFromOtherFiles(t *testing.T) {
	var valid, other bytes.Buffer
	Write(&valid, []Group{{Labels: map[string]string{"job": "x"}}})
	gob.NewEncoder(&other).Encode(map[string]int{"a": 1})
	tests := []struct {
		name string
		head []byte
		want bool
	}{
		{"a reference file is recognised", valid.Bytes(), true},
		{"an empty reference file (no groups) is recognised", func() []byte {
			var b bytes.Buffer
			Write(&b, nil)
			return b.Bytes()
		}(), true},
		{"a pushgate journal is not", []byte("\x89PGJ\r\n\x1a\n\x01\x00\x00\x00\x00\x00\x00\x00"), false},
		{"an empty file is not", nil, false},
		{"text is not", []byte("job Labels Metrics"), false},
		{"text starting with a high byte is not", []byte("\xffoo Labels Metrics"), false},
		{"a gob stream of another type is not", other.Bytes(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Sniff(tt.head[:min(SniffLen, len(tt.head))]); got != tt.want {
				t.Errorf("Sniff = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCanonicalKeyMatchesTheReference(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"a job alone is name, separator, value", map[string]string{"job": "a"}, "job\xffa"},
		{"names are sorted and joined without a trailing separator", map[string]string{"job": "a", "instance": ""}, "instance\xff\xffjob\xffa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := canonicalKey(tt.labels); got != tt.want {
				t.Errorf("canonicalKey = %q, want %q", got, tt.want)
			}
		})
	}
}
