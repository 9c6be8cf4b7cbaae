package store

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/internal/storetest"
)

// utf8Families parses a text body under the UTF-8 name rules.
func utf8Families(t *testing.T, text string) []*dto.MetricFamily {
	t.Helper()
	decoded, err := exposition.Decode(strings.NewReader(text), "", exposition.DecodeOptions{UTF8Names: true})
	if err != nil {
		t.Fatalf("decode test body: %v", err)
	}
	return decoded.Families
}

// histogramFamily is a protobuf-only histogram: classic buckets with the
// given upper bounds, or a native one with float counts.
func histogramFamily(name string, bounds []float64, floatCounts bool) *dto.MetricFamily {
	h := &dto.Histogram{SampleCount: proto.Uint64(5), SampleSum: proto.Float64(1)}
	for i, b := range bounds {
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: proto.Float64(b), CumulativeCount: proto.Uint64(uint64(i + 1))})
	}
	if floatCounts {
		h = &dto.Histogram{
			SampleCountFloat: proto.Float64(2.5), SampleSum: proto.Float64(1), Schema: proto.Int32(0),
			ZeroThreshold: proto.Float64(1e-9), ZeroCountFloat: proto.Float64(0.5),
			PositiveSpan: []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(1)}}, PositiveCount: []float64{2},
		}
	}
	return &dto.MetricFamily{Name: proto.String(name), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{Histogram: h}}}
}

// summaryFamily is a protobuf-only summary with the given quantile ranks.
func summaryFamily(name string, ranks ...float64) *dto.MetricFamily {
	sm := &dto.Summary{SampleCount: proto.Uint64(5), SampleSum: proto.Float64(1)}
	for _, r := range ranks {
		sm.Quantile = append(sm.Quantile, &dto.Quantile{Quantile: proto.Float64(r), Value: proto.Float64(1)})
	}
	return &dto.MetricFamily{Name: proto.String(name), Type: dto.MetricType_SUMMARY.Enum(), Metric: []*dto.Metric{{Summary: sm}}}
}

// identityStep is one push of TestSeriesIdentity: a text body (parsed under
// the store's name rules) or protobuf families.
type identityStep struct {
	key  groupkey.Key
	body string
	fams []*dto.MetricFamily
}

func (st identityStep) push(t *testing.T, s *Store, at time.Time) error {
	t.Helper()
	fams := st.fams
	if fams == nil {
		if s.opts.UTF8Names {
			fams = utf8Families(t, st.body)
		} else {
			fams = storetest.Families(t, st.body)
		}
	}
	_, err := s.Push(context.Background(), Push{Key: st.key, Method: Replace, Families: fams, Time: at})
	return err
}

// TestSeriesIdentity pins DESIGN §5: a push that would make any scrape show
// one series, one name or one label name twice, under any escaping, is
// rejected with a one-line reason and leaves the stored groups as they were.
func TestSeriesIdentity(t *testing.T) {
	hist := "# TYPE h histogram\nh_bucket{le=\"0.1\"} 2\nh_bucket{le=\"1\"} 5\nh_bucket{le=\"+Inf\"} 6\nh_sum 3\nh_count 6\n"
	cases := []struct {
		name    string
		utf8    bool
		setup   []identityStep
		step    identityStep
		wantErr string
	}{
		{"a histogram bucket repeated in one push is rejected", false, nil,
			identityStep{key: storetest.Key("job", "dh"), body: "# TYPE h histogram\nh_bucket{le=\"0.1\"} 2\nh_bucket{le=\"1\"} 5\nh_bucket{le=\"1\"} 99\nh_bucket{le=\"+Inf\"} 6\nh_sum 3\nh_count 6\n"},
			`bucket le="1" appears twice`},
		{"a summary quantile spelled 0.5 and 0.50 is rejected", false, nil,
			identityStep{key: storetest.Key("job", "ds"), body: "# TYPE s summary\ns{quantile=\"0.5\"} 1\ns{quantile=\"0.50\"} 2\ns_sum 3\ns_count 6\n"},
			`quantile="0.5" appears twice`},
		{"a protobuf summary with quantile NaN twice is rejected", false, nil,
			identityStep{key: storetest.Key("job", "ds"), fams: []*dto.MetricFamily{summaryFamily("s", math.NaN(), 0.5, math.NaN())}},
			`quantile="NaN" appears twice`},
		{"a protobuf histogram with +Inf twice is rejected", false, nil,
			identityStep{key: storetest.Key("job", "dp"), fams: []*dto.MetricFamily{histogramFamily("h", []float64{1, math.Inf(1), math.Inf(1)}, false)}},
			`bucket le="+Inf" appears twice`},
		{"a float native histogram is rejected whatever was scraped last", false, nil,
			identityStep{key: storetest.Key("job", "fh"), fams: []*dto.MetricFamily{histogramFamily("h", nil, true)}},
			"float histograms cannot be served as OpenMetrics 1.0"},
		{"an exemplar with an empty label name (no scrape can write it) is rejected", false, nil,
			identityStep{key: storetest.Key("job", "ex"), fams: []*dto.MetricFamily{{Name: proto.String("c_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{{
				Counter: &dto.Counter{Value: proto.Float64(1), Exemplar: &dto.Exemplar{Value: proto.Float64(1), Label: []*dto.LabelPair{{Name: proto.String(""), Value: proto.String("v")}}}},
			}}}}},
			`counter exemplar: invalid label name ""`},
		{"m with an empty label beside m in one push is rejected", false, nil,
			identityStep{key: storetest.Key("job", "e"), body: "m{a=\"\"} 1\nm 2\n"},
			"duplicate series"},
		{"a group with an empty grouping label beside the same group without it is rejected", false,
			[]identityStep{{key: storetest.Key("job", "j"), body: "m 1\n"}},
			identityStep{key: storetest.Key("job", "j", "a", ""), body: "other 1\n"},
			"already pushed by group"},
		{"a gauge X beside a counter X_total (one OpenMetrics family X) is rejected", false,
			[]identityStep{{key: storetest.Key("job", "a"), body: "# TYPE x_total counter\nx_total 1\n"}},
			identityStep{key: storetest.Key("job", "b"), body: "# TYPE x gauge\nx 1\n"},
			`both would expose "x"`},
		{"a counter X beside a gauge X_total is rejected", false,
			[]identityStep{{key: storetest.Key("job", "a"), body: "# TYPE x_total gauge\nx_total 1\n"}},
			identityStep{key: storetest.Key("job", "b"), body: "# TYPE x counter\nx 1\n"},
			`both would expose "x_total"`},
		{"a gauge X_bucket beside a histogram X in one push is rejected", false, nil,
			identityStep{key: storetest.Key("job", "a"), fams: []*dto.MetricFamily{
				histogramFamily("h", []float64{1}, false),
				{Name: proto.String("h_bucket"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(1)}}}},
			}},
			"collides"},
		{"a gauge X_bucket beside a stored histogram X is rejected", false,
			[]identityStep{{key: storetest.Key("job", "a"), body: hist}},
			identityStep{key: storetest.Key("job", "b"), body: "# TYPE h_bucket gauge\nh_bucket 1\n"},
			`both would expose "h_bucket"`},
		{"a metric named like a push timestamp under escaping is rejected", true, nil,
			identityStep{key: storetest.Key("job", "a"), body: "{\"push.time.seconds\"} 1\n"},
			`"push_time_seconds" under escaping=underscores`},
		{"families m.x and m_x in two groups are rejected", true,
			[]identityStep{{key: storetest.Key("job", "a"), body: "# TYPE \"m.x\" gauge\n{\"m.x\"} 1\n"}},
			identityStep{key: storetest.Key("job", "b"), body: "# TYPE m_x counter\nm_x 1\n"},
			"under escaping=underscores"},
		{"label a.b from the path beside a_b in the body is rejected", true, nil,
			identityStep{key: storetest.Key("job", "k", "a.b", "v"), body: "m{a_b=\"w\"} 1\n"},
			`label name "a_b" collides with label name "a.b"`},
		{"grouping keys a.b=v and a_b=v are rejected", true,
			[]identityStep{{key: storetest.Key("job", "k", "a.b", "v"), body: "m 1\n"}},
			identityStep{key: storetest.Key("job", "k", "a_b", "v"), body: "n 1\n"},
			"collides with label name"},
		{"label names ü and 😀 are rejected", true,
			[]identityStep{{key: storetest.Key("job", "a"), body: "{\"m\",\"ü\"=\"1\"} 1\n"}},
			identityStep{key: storetest.Key("job", "b"), body: "{\"n\",\"😀\"=\"1\"} 1\n"},
			"collides with label name"},
		{"a label name that escapes to a reserved __ name is rejected", true, nil,
			identityStep{key: storetest.Key("job", "a"), body: "{\"m\",\"..name..\"=\"1\"} 1\n"},
			"a name Prometheus reserves"},
		{"a legacy a_dot_b beside a UTF-8 a.b is rejected", true,
			[]identityStep{{key: storetest.Key("job", "a"), body: "{\"a.b\"} 1\n"}},
			identityStep{key: storetest.Key("job", "b"), body: "a_dot_b 1\n"},
			"under escaping=dots"},
		{"a label name with a colon beside its escaped spelling is rejected", true, nil,
			identityStep{key: storetest.Key("job", "a"), body: "{\"m\",\"x:y\"=\"1\",U__x_3a_y=\"2\"} 1\n"},
			"collides with label name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{UTF8Names: tc.utf8})
			for i, st := range tc.setup {
				if err := st.push(t, s, t0); err != nil {
					t.Fatalf("setup push %d: %v", i, err)
				}
			}
			before := groupsText(t, s)
			err := tc.step.push(t, s, t0.Add(time.Second))
			var rej *admission.Error
			if !errors.As(err, &rej) || rej.Class != admission.Refused || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want a refusal containing %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("reason is not one line: %q", err)
			}
			if after := groupsText(t, s); after != before {
				t.Errorf("the pushed data changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// groupsText describes the stored groups' pushed families (not the
// timestamp families, which a rejection may set).
func groupsText(t *testing.T, s *Store) string {
	t.Helper()
	var b strings.Builder
	for _, g := range s.Groups() {
		for _, f := range g.Families() {
			if f.Name() == PushTimeName || f.Name() == PushFailureTimeName {
				continue
			}
			mf, err := f.Decode()
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString(g.Key().String() + " " + mf.String() + "\n")
		}
	}
	return b.String()
}

func TestAcceptedAfterTheConflictingFamilyIsGone(t *testing.T) {
	s := New(Options{UTF8Names: true})
	a, b := storetest.Key("job", "a"), storetest.Key("job", "b")
	if err := (identityStep{key: a, body: "{\"m.x\",\"a.b\"=\"1\"} 1\n"}).push(t, s, t0); err != nil {
		t.Fatal(err)
	}
	if err := (identityStep{key: b, body: "m_x{a_b=\"1\"} 1\n"}).push(t, s, t0); err == nil {
		t.Fatal("m_x{a_b} was accepted beside m.x{a.b}")
	}
	// The same group may change its own names: its old families go.
	if err := (identityStep{key: a, body: "m_x{a_b=\"1\"} 1\n"}).push(t, s, t0); err != nil {
		t.Fatalf("group a could not replace its own m.x by m_x: %v", err)
	}
	if _, err := s.Delete(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if err := (identityStep{key: b, body: "{\"m.x\",\"a.b\"=\"1\"} 1\n"}).push(t, s, t0); err != nil {
		t.Fatalf("m.x{a.b} was refused after the group holding m_x{a_b} was deleted: %v", err)
	}
}

func TestPushedTimestampFamiliesAreReplacedByTheGatewaysOwn(t *testing.T) {
	s := New(Options{})
	mustPush(t, s, storetest.Key("job", "a"), Replace, "push_time_seconds 1\npush_failure_time_seconds 2\nm 3\n", t0)
	_, fams := scrape(t, s)
	if v, ok := storetest.Value(fams, PushTimeName, map[string]string{"job": "a", "instance": ""}); !ok || v != unixSeconds(t0.UnixNano()) {
		t.Errorf("push_time_seconds = %v (present %v), want the push's own time %v", v, ok, unixSeconds(t0.UnixNano()))
	}
	if v, _ := storetest.Value(fams, PushFailureTimeName, map[string]string{"job": "a", "instance": ""}); v != 0 {
		t.Errorf("push_failure_time_seconds = %v, want 0", v)
	}
	if _, ok := storetest.Value(fams, "m", map[string]string{"job": "a", "instance": ""}); !ok {
		t.Error("the rest of the push was not stored")
	}
	if got := s.OverriddenFamilies(); got != 2 {
		t.Errorf("OverriddenFamilies = %d, want 2", got)
	}
}

func TestReservedNamesRejectCollidingPushes(t *testing.T) {
	s := New(Options{})
	s.Reserve([]*dto.MetricFamily{
		{Name: proto.String("pushgate_journal_syncs_total"), Type: dto.MetricType_COUNTER.Enum()},
		{Name: proto.String("go_memstats_alloc_bytes"), Type: dto.MetricType_GAUGE.Enum()},
		{Name: proto.String("go_memstats_alloc_bytes_total"), Type: dto.MetricType_COUNTER.Enum()},
	})
	for _, body := range []string{
		"# TYPE pushgate_journal_syncs_total histogram\npushgate_journal_syncs_total_bucket{le=\"+Inf\"} 1\npushgate_journal_syncs_total_sum 1\npushgate_journal_syncs_total_count 1\n",
		"# TYPE pushgate_journal_syncs gauge\npushgate_journal_syncs 1\n",
	} {
		if err := push(t, s, storetest.Key("job", "a"), Replace, body, t0); err == nil {
			t.Errorf("accepted a push colliding with an own name:\n%s", body)
		}
	}
	mustPush(t, s, storetest.Key("job", "b"), Replace, "# TYPE pushgate_journal_syncs_total counter\npushgate_journal_syncs_total 1\n", t0)
}

// TestPythonsCreatedGaugesAreAccepted: Python's prometheus_client pushes a
// gauge X_created beside every counter X_total, summary and histogram.
func TestPythonsCreatedGaugesAreAccepted(t *testing.T) {
	s := New(Options{})
	mustPush(t, s, storetest.Key("job", "py"), Replace, "# TYPE py_runs_total counter\npy_runs_total 3\n# TYPE py_runs_created gauge\npy_runs_created 1.7e9\n"+
		"# TYPE lat summary\nlat_sum 1\nlat_count 1\n# TYPE lat_created gauge\nlat_created 1.7e9\n", t0)
}

// TestBucketsPushedOutOfOrderAreServedInOrder: Prometheus' protobuf parser
// stops at the +Inf bucket while its text parser reads every line, so a
// bucket pushed after +Inf must be stored in order, or the two formats would
// show different series.
func TestBucketsPushedOutOfOrderAreServedInOrder(t *testing.T) {
	s := New(Options{})
	body := "# TYPE h histogram\nh_bucket{le=\"0.1\"} 2\nh_bucket{le=\"10.0\"} 3\nh_bucket{le=\"+Inf\"} 5\nh_bucket{le=\"2.50\"} 5\nh_sum 7.5\nh_count 5\n"
	if err := (identityStep{key: storetest.Key("job", "o"), body: body}).push(t, s, time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	for enc, want := range map[exposition.Encoding]string{
		exposition.EncodingText:        "0.1 2.5 10 +Inf",
		exposition.EncodingOpenMetrics: "0.1 2.5 10.0 +Inf",
	} {
		sn := s.Snapshot()
		out := string(snapshotBody(t, sn, exposition.NewFormat(enc)))
		sn.Release()
		var les []string
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "h_bucket{") {
				les = append(les, line[strings.Index(line, "le=")+4:strings.LastIndex(line, "\"")])
			}
		}
		if got := strings.Join(les, " "); got != want {
			t.Errorf("%v: buckets served as %q, want %q", enc, got, want)
		}
	}
}
