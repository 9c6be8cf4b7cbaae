package scrape

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/store"
)

// protoTextFormat negotiates the protobuf text format of encoding
// ("text" or "compact-text").
func protoTextFormat(t *testing.T, encoding string) exposition.Format {
	t.Helper()
	f := exposition.Negotiate(http.Header{"Accept": {"application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=" + encoding}})
	if !isProtoText(f) {
		t.Fatalf("encoding=%s negotiates %s", encoding, f)
	}
	return f
}

func TestTheProtobufTextFormatsMergeFamiliesByTheRuleOfEveryFormat(t *testing.T) {
	s := newStore(store.Options{})
	mustPush(t, s, storetest.Key("job", "b"), store.Replace, "# TYPE m gauge\nm 2\n# HELP shared Pushed.\n# TYPE shared gauge\nshared 3\n", t0)
	mustPush(t, s, storetest.Key("job", "a"), store.Replace, "# HELP m First.\n# TYPE m gauge\nm{x=\"1\"} 1\n", t0)
	own := []*dto.MetricFamily{{
		Name: proto.String("shared"), Help: proto.String("Own."), Type: dto.MetricType_GAUGE.Enum(),
		Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(7)}}},
	}, {
		Name: proto.String("own_empty"), Help: proto.String("No samples."), Type: dto.MetricType_COUNTER.Enum(),
	}}
	for _, encoding := range []string{"text", "compact-text"} {
		t.Run(encoding, func(t *testing.T) {
			var body bytes.Buffer
			if _, err := s.Snapshot().write(&body, protoTextFormat(t, encoding), own); err != nil {
				t.Fatal(err)
			}
			sep := "\n\n"
			if encoding == "compact-text" {
				sep = "\n"
			}
			var names []string
			fams := map[string]*dto.MetricFamily{}
			for _, msg := range strings.Split(strings.TrimRight(body.String(), "\n"), sep) {
				mf := &dto.MetricFamily{}
				if err := prototext.Unmarshal([]byte(msg), mf); err != nil {
					t.Fatalf("%q does not parse as a MetricFamily: %v", msg, err)
				}
				names = append(names, mf.GetName())
				fams[mf.GetName()] = mf
			}
			if want := "m push_failure_time_seconds push_time_seconds shared"; strings.Join(names, " ") != want {
				t.Errorf("families %q, want %q in name order, each once, none without samples", names, want)
			}
			if m := fams["m"]; m.GetHelp() != "First." || len(m.Metric) != 2 || labelValue(m.Metric[0], "job") != "a" || labelValue(m.Metric[1], "job") != "b" {
				t.Errorf("m: want the first HELP and the groups' metrics in grouping-key order, got %v", m)
			}
			if sh := fams["shared"]; sh.GetHelp() != "Own." || len(sh.Metric) != 2 || sh.Metric[0].GetGauge().GetValue() != 7 {
				t.Errorf("shared: want the built-in family's HELP and metrics first, got %v", sh)
			}
		})
	}
}

func TestAProtobufTextScrapeLeavesTheEncodingPushesRenderForAlone(t *testing.T) {
	s := newStore(store.Options{})
	var discard bytes.Buffer
	if _, err := s.Snapshot().write(&discard, exposition.NewFormat(exposition.EncodingOpenMetrics), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot().write(&discard, protoTextFormat(t, "text"), nil); err != nil {
		t.Fatal(err)
	}
	mustPush(t, s, storetest.Key("job", "j"), store.Replace, "# TYPE m gauge\nm 1\n", t0)
	if packed, _, enc := familyOf(t, s, storetest.Key("job", "j"), "m").Cache().Pushed(); packed == nil || enc != exposition.EncodingOpenMetrics {
		t.Errorf("the push rendered %v (block %d bytes), want the OpenMetrics scraped before the protobuf text scrape", enc, len(packed))
	}
}

func TestGzipScrapeFromSegmentsRefusesTheProtobufTextFormats(t *testing.T) {
	s := newStore(store.Options{})
	if _, err := s.Snapshot().writeGzip(&bytes.Buffer{}, protoTextFormat(t, "compact-text"), nil); err == nil {
		t.Fatal("protobuf text gzip scrape from segments succeeded, want an error")
	}
}

// labelValue returns the value of m's label name ("" when absent).
func labelValue(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}
