package scrape

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupcodec"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/store"
)

// scrapeIn scrapes s in the format asked for by accept, gzip-compressed when
// gz is set, and returns the (decompressed) body.
func scrapeIn(t *testing.T, s *testStore, accept string, gz bool, own ...*dto.MetricFamily) string {
	t.Helper()
	f := exposition.Negotiate(http.Header{"Accept": {accept}})
	if gz {
		return string(gunzipScrape(t, s, f, own...))
	}
	var buf bytes.Buffer
	sn := s.Snapshot()
	defer sn.Release()
	if _, err := sn.write(&buf, f, own); err != nil {
		t.Fatalf("scrape in %s: %v", f, err)
	}
	return buf.String()
}

const (
	acceptText        = "text/plain;version=0.0.4"
	acceptOpenMetrics = "application/openmetrics-text;version=1.0.0"
)

// requireWholeOpenMetrics fails unless body is a complete OpenMetrics
// response holding each of want and no family name twice.
func requireWholeOpenMetrics(t *testing.T, body string, want ...string) {
	t.Helper()
	if !strings.HasSuffix(body, "# EOF\n") {
		t.Fatalf("the scrape is cut short (no # EOF):\n%s", body)
	}
	requireFamilyNamesOnce(t, body)
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("the scrape lacks %q:\n%s", w, body)
		}
	}
}

// requireFamilyNamesOnce fails if two HELP or two TYPE lines name one
// family.
func requireFamilyNamesOnce(t *testing.T, body string) {
	t.Helper()
	seen := map[string]bool{}
	for line := range strings.Lines(body) {
		for _, keyword := range []string{"# HELP ", "# TYPE "} {
			rest, ok := strings.CutPrefix(line, keyword)
			if !ok {
				continue
			}
			name := keyword + rest[:strings.IndexByte(rest, ' ')]
			if seen[name] {
				t.Errorf("two %s lines:\n%s", name, body)
			}
			seen[name] = true
		}
	}
}

func TestAnOwnFamilyThatCannotBeRenderedIsLeftOutOfTheScrape(t *testing.T) {
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip %v", gz), func(t *testing.T) {
			s := newStore(store.Options{})
			mustPush(t, s, storetest.Key("job", "j"), store.Replace, "z 1\n", t0)
			body := scrapeIn(t, s, acceptOpenMetrics, gz, storetest.FloatHistogram("f"), ownFamilies()[0])
			requireWholeOpenMetrics(t, body, "go_goroutines 12.0\n", `z{instance="",job="j"} 1.0`)
			if strings.Contains(body, "f_sum") {
				t.Errorf("the float histogram is in the OpenMetrics scrape:\n%s", body)
			}
			if got := s.SkippedFamilies(); got != 1 {
				t.Errorf("SkippedFamilies = %d, want 1", got)
			}
			if text := scrapeIn(t, s, acceptText, gz, storetest.FloatHistogram("f")); !strings.Contains(text, "f_sum 12.5\n") {
				t.Errorf("the text scrape lacks the float histogram:\n%s", text)
			}
		})
	}
}

// restoreRecord restores into s the group k holding fams from a journal
// record (groupcodec): how a family that pushes now refuse, stored by an
// older gateway, could reach a scrape. A restored family is rebuilt from
// its bytes without the push checks.
func restoreRecord(t *testing.T, s *testStore, k groupkey.Key, fams ...*dto.MetricFamily) {
	t.Helper()
	g := groupcodec.Group{PushTime: t0}
	for _, l := range k.Labels() {
		g.Labels = append(g.Labels, groupcodec.Label{Name: l.Name, Value: l.Value})
	}
	for _, mf := range fams {
		metrics, err := exposition.AppendBody(nil, mf, exposition.NewFormat(exposition.EncodingProtobuf))
		if err != nil {
			t.Fatal(err)
		}
		g.Families = append(g.Families, groupcodec.Family{Name: mf.GetName(), Help: mf.GetHelp(), Unit: mf.GetUnit(), Type: mf.GetType(), LastPush: t0, Metrics: metrics})
	}
	if err := s.Restore(k.ID(), groupcodec.Encode(&g)); err != nil {
		t.Fatal(err)
	}
}

func TestAStoredFamilyThatCannotBeRenderedIsLeftOutOfTheScrape(t *testing.T) {
	for _, lastScraped := range []string{acceptText, acceptOpenMetrics} {
		for _, gz := range []bool{false, true} {
			t.Run(fmt.Sprintf("after %s, gzip %v", lastScraped, gz), func(t *testing.T) {
				s := newStore(store.Options{})
				scrapeIn(t, s, lastScraped, false)
				k := storetest.Key("job", "j")
				labels := []*dto.LabelPair{{Name: proto.String("instance"), Value: proto.String("")}, {Name: proto.String("job"), Value: proto.String("j")}}
				mf := storetest.FloatHistogram("f")
				mf.Metric[0].Label = labels
				z := &dto.MetricFamily{Name: proto.String("z"), Type: dto.MetricType_UNTYPED.Enum(), Metric: []*dto.Metric{{Label: labels, Untyped: &dto.Untyped{Value: proto.Float64(1)}}}}
				restoreRecord(t, s, k, mf, z)
				for i := range 2 {
					body := scrapeIn(t, s, acceptOpenMetrics, gz)
					requireWholeOpenMetrics(t, body, `z{instance="",job="j"} 1.0`, "push_time_seconds{")
					if strings.Contains(body, "f_") {
						t.Errorf("scrape %d holds the float histogram:\n%s", i, body)
					}
				}
				if got := s.SkippedFamilies(); got != 2 {
					t.Errorf("SkippedFamilies = %d, want 2", got)
				}
			})
		}
	}
}

func TestAnOpenMetricsScrapeHoldsEachFamilyNameOnce(t *testing.T) {
	own := []*dto.MetricFamily{
		{Name: proto.String("go_memstats_alloc_bytes"), Help: proto.String("Allocated."), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(5)}}}},
		{Name: proto.String("go_memstats_alloc_bytes_total"), Help: proto.String("Allocated in total."), Type: dto.MetricType_COUNTER.Enum(),
			Metric: []*dto.Metric{{Counter: &dto.Counter{Value: proto.Float64(9)}}}},
		{Name: proto.String("zz_own_total"), Type: dto.MetricType_COUNTER.Enum(),
			Metric: []*dto.Metric{{Counter: &dto.Counter{Value: proto.Float64(3)}}}},
	}
	s := newStore(store.Options{})
	mustPush(t, s, storetest.Key("job", "j"), store.Replace, "z 1\n", t0)
	for _, esc := range []string{"allow-utf-8", "underscores", "dots", "values"} {
		for _, gz := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, gzip %v", esc, gz), func(t *testing.T) {
				body := scrapeIn(t, s, acceptOpenMetrics+";escaping="+esc, gz, own...)
				requireWholeOpenMetrics(t, body,
					"# TYPE go_memstats_alloc_bytes gauge\n",
					"# HELP go_memstats_alloc_bytes_total Allocated in total.\ngo_memstats_alloc_bytes_total 9.0\n",
					"# TYPE zz_own counter\nzz_own_total 3.0\n")
			})
		}
	}
	if text := scrapeIn(t, s, acceptText, false, own...); !strings.Contains(text, "# TYPE go_memstats_alloc_bytes_total counter\n") {
		t.Errorf("the text scrape does not keep the counter's type:\n%s", text)
	}
}

// requireEscapedExemplars fails unless the exemplar of c_total, labelled
// trace.id, is written right in an OpenMetrics scrape of s under every
// escaping.
func requireEscapedExemplars(t *testing.T, s *testStore) {
	t.Helper()
	for esc, want := range map[string]string{
		"allow-utf-8": `# {"trace.id"="abc"} 0.5`,
		"underscores": `# {trace_id="abc"} 0.5`,
		"dots":        `# {trace_dot_id="abc"} 0.5`,
		"values":      `# {U__trace_2e_id="abc"} 0.5`,
	} {
		body := scrapeIn(t, s, acceptOpenMetrics+";escaping="+esc, false)
		if !strings.Contains(body, want) {
			t.Errorf("escaping=%s: the exemplar is not written %s:\n%s", esc, want, body)
		}
	}
}

// exemplarPush pushes c_total with an exemplar labelled trace.id (exemplar
// label names follow the UTF-8 rules whatever the store's) to the group {job="j"}.
func exemplarPush(t *testing.T, s *testStore) {
	t.Helper()
	mf := &dto.MetricFamily{Name: proto.String("c_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{{
		Counter: &dto.Counter{Value: proto.Float64(1), Exemplar: &dto.Exemplar{
			Label: []*dto.LabelPair{{Name: proto.String("trace.id"), Value: proto.String("abc")}}, Value: proto.Float64(0.5),
		}},
	}}}
	if _, err := s.Push(context.Background(), store.Push{Key: storetest.Key("job", "j"), Families: []*dto.MetricFamily{mf}, Time: t0}); err != nil {
		t.Fatal(err)
	}
}

func TestExemplarLabelNamesAreEscapedInCachedBodies(t *testing.T) {
	s := newStore(store.Options{})
	scrapeIn(t, s, acceptOpenMetrics, false) // pushes now render OpenMetrics bodies
	exemplarPush(t, s)
	requireEscapedExemplars(t, s)
}

func TestExemplarLabelNamesAreEscapedAfterARestore(t *testing.T) {
	s := newStore(store.Options{})
	exemplarPush(t, s)
	k := storetest.Key("job", "j")
	r := newStore(store.Options{})
	ops, err := s.JournalOps()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if err := r.Restore(op.Key, op.Value); err != nil {
			t.Fatal(err)
		}
	}
	if r.Group(k) == nil {
		t.Fatal("the group was not restored")
	}
	requireEscapedExemplars(t, r)
}
