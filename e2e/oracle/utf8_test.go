package oracle

import (
	"bytes"
	"context"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// utf8Case is a push body that holds a string that is not UTF-8 in one
// field, and a part of the one-line reason the gateway must give.
type utf8Case struct {
	name   string
	proto  bool
	body   []byte
	reason string
}

// utf8Cases returns a body for every string field of both push formats
// with the bytes 0x83 0xE8 in it.
func utf8Cases(t *testing.T) []utf8Case {
	t.Helper()
	const bad = "\x83\xe8"
	pb := func(mfs ...*dto.MetricFamily) []byte {
		var b bytes.Buffer
		for _, mf := range mfs {
			if _, err := protodelim.MarshalTo(&b, mf); err != nil {
				t.Fatal(err)
			}
		}
		return b.Bytes()
	}
	withHelp := gauge("x")
	withHelp.Help = proto.String("Requests hand" + bad + "led.")
	withUnit := gauge("y_seconds")
	withUnit.Unit = proto.String("sec" + bad)
	exemplar := func(name, value string) *dto.MetricFamily {
		return &dto.MetricFamily{Name: proto.String("c_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{{
			Counter: &dto.Counter{Value: proto.Float64(1), Exemplar: &dto.Exemplar{
				Value: proto.Float64(1), Timestamp: timestamppb.New(time.Unix(1700000000, 0)),
				Label: []*dto.LabelPair{{Name: proto.String(name), Value: proto.String(value)}},
			}},
		}}}
	}
	native := &dto.MetricFamily{Name: proto.String("nh"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{Histogram: &dto.Histogram{
		SampleCount: proto.Uint64(1), SampleSum: proto.Float64(1), Schema: proto.Int32(0), ZeroThreshold: proto.Float64(0),
		PositiveSpan: []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(1)}}, PositiveDelta: []int64{1},
		Exemplars: []*dto.Exemplar{{Value: proto.Float64(1), Timestamp: timestamppb.New(time.Unix(1700000000, 0)),
			Label: []*dto.LabelPair{{Name: proto.String("trace_id"), Value: proto.String(bad)}}}},
	}}}}
	return []utf8Case{
		{"text HELP", false, []byte("# HELP x Requests hand" + bad + "led.\n# TYPE x counter\nx 2\n"), `help text of metric "x"`},
		{"text HELP after the samples", false, []byte("x 2\n# HELP x " + bad + "\n"), `help text of metric "x"`},
		{"text HELP beside a quoted name", false, []byte("# HELP x " + bad + "\nx 2\n{\"x\",a=\"1\"} 3\n"), `help text of metric "x"`},
		{"text label value", false, []byte("x{a=\"" + bad + "\"} 2\n"), "label value"},
		{"text quoted metric name", false, []byte("{\"x" + bad + "\"} 2\n"), "metric name"},
		{"text quoted label name", false, []byte("x{\"a" + bad + "\"=\"1\"} 2\n"), "label name"},
		{"protobuf metric name", true, pb(gauge("pb_bad_\x83name")), `metric name "pb_bad_\x83name" is not valid UTF-8`},
		{"protobuf HELP", true, pb(withHelp), `help text of metric "x" is not valid UTF-8`},
		{"protobuf unit", true, pb(withUnit), `unit of metric "y_seconds" is not valid UTF-8`},
		{"protobuf label name", true, pb(gauge("y", "a"+bad, "1")), `label name "a\x83\xe8" in metric "y" is not valid UTF-8`},
		{"protobuf label value", true, pb(gauge("y", "a", bad)), `invalid label value "\x83\xe8"`},
		{"protobuf exemplar label name", true, pb(exemplar("trace"+bad, "1")), `label name "trace\x83\xe8" is not valid UTF-8`},
		{"protobuf exemplar label value", true, pb(exemplar("trace_id", bad)), `value of label trace_id is not valid UTF-8`},
		{"protobuf native histogram exemplar", true, pb(native), `value of label trace_id is not valid UTF-8`},
	}
}

// scrapeAll scrapes every variant and fails on any violation a single
// scrape shows (Prometheus 3's textparse and expfmt among its checks). It
// returns each variant's pushed samples, as sorted lines.
func scrapeAll(ctx context.Context, t *testing.T, gw *gateway) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, v := range variants {
		res, err := scrape(ctx, gw.url, v)
		if err != nil {
			t.Fatalf("scrape %s: %v", v.name, err)
		}
		for _, vi := range res.violations {
			t.Errorf("scrape %s: %s: %s", v.name, vi.check, vi.detail)
		}
		var lines []string
		for _, s := range res.pushedSamples() {
			lines = append(lines, s.id+" "+s.valueString())
		}
		sort.Strings(lines)
		out[v.name] = strings.Join(lines, "\n")
	}
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// TestInvalidUTF8LeavesEveryScrapeParsable pushes bodies with a string
// that is not UTF-8 in each field of both formats, by PUT and POST, to a
// group that exists and to one that does not: each must be refused with
// 400 and a reason naming the field, and change nothing (every pushed
// series, push_failure_time_seconds included, stays as it was), and every
// scrape must still parse with Prometheus 3's parsers. A HELP text that is
// not UTF-8 was once accepted and made textparse refuse every text and
// OpenMetrics scrape.
func TestInvalidUTF8LeavesEveryScrapeParsable(t *testing.T) {
	bin := gatewayBinary(t)
	ctx := context.Background()
	cases := utf8Cases(t)
	for _, cfg := range configs[:2] {
		t.Run(cfg.name, func(t *testing.T) {
			dir := t.TempDir()
			gw, err := startGateway(bin, cfg.flags(dir)...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = gw.stop() })
			base := "# HELP x Requests handled.\n# TYPE x counter\nx{a=\"1\"} 1\n# HELP y A gauge.\n# TYPE y gauge\ny 2\n"
			if resp, err := send(ctx, "PUT", gw.url+"/metrics/job/a/instance/i", []byte(base)); err != nil || resp.status != 200 {
				t.Fatalf("baseline push: %v %d %s", err, resp.status, resp.body)
			}
			before := scrapeAll(ctx, t, gw)
			for _, c := range cases {
				var header []string
				if c.proto {
					header = []string{"Content-Type", protoContentType}
				}
				for _, path := range []string{"/metrics/job/a/instance/i", "/metrics/job/new"} {
					for _, method := range []string{"PUT", "POST"} {
						resp, err := send(ctx, method, gw.url+path, c.body, header...)
						if err != nil {
							t.Fatal(err)
						}
						reason := strings.TrimSuffix(string(resp.body), "\n")
						if resp.status != 400 || !strings.Contains(reason, c.reason) || strings.Contains(reason, "\n") {
							t.Errorf("%s: %s %s answered %d %q, want 400 with %q", c.name, method, path, resp.status, reason, c.reason)
						}
					}
				}
				after := scrapeAll(ctx, t, gw)
				for _, v := range variants {
					if after[v.name] != before[v.name] {
						t.Errorf("%s changed the pushed series in scrape %s:\nbefore:\n%s\nafter:\n%s", c.name, v.name, before[v.name], after[v.name])
						break
					}
				}
			}
			if t.Failed() && os.Getenv("ORACLE_DEBUG") != "" {
				t.Logf("gateway log:\n%s", gw.output())
			}
		})
	}
}
