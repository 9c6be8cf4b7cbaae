package web

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/otlp"
)

// otlpFuzzSeeds returns requests of every point kind, with the shapes the
// translation must refuse or clamp (NaN, Inf, deltas, an exponential
// histogram of a high scale, a resource without service.name).
func otlpFuzzSeeds() []pmetric.Metrics {
	now := pcommon.NewTimestampFromTime(time.Now())
	start := pcommon.NewTimestampFromTime(time.Now().Add(-time.Minute))
	md := otlpMetricsRequest(math.NaN(), "shared.job", "other")
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "kinds")
	rm.Resource().Attributes().PutStr("service.instance.id", "f81d4fae")
	rm.Resource().Attributes().PutStr("host.name", "h")
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	h := ms.AppendEmpty()
	h.SetName("http.duration")
	h.SetUnit("s")
	hp := h.SetEmptyHistogram().DataPoints().AppendEmpty()
	hp.SetTimestamp(now)
	hp.SetStartTimestamp(start)
	hp.ExplicitBounds().FromRaw([]float64{0.1, 1})
	hp.BucketCounts().FromRaw([]uint64{1, 2, 3})
	hp.SetCount(6)
	hp.SetSum(4.5)
	e := ms.AppendEmpty()
	e.SetName("size")
	e.SetUnit("By")
	e.SetEmptyExponentialHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	ep := e.ExponentialHistogram().DataPoints().AppendEmpty()
	ep.SetTimestamp(now)
	ep.SetStartTimestamp(start)
	ep.SetScale(12)
	ep.SetCount(3)
	ep.SetSum(30)
	ep.SetZeroCount(1)
	ep.Positive().SetOffset(-2)
	ep.Positive().BucketCounts().FromRaw([]uint64{1, 0, 1})
	s := ms.AppendEmpty()
	s.SetName("latency")
	sp := s.SetEmptySummary().DataPoints().AppendEmpty()
	sp.SetTimestamp(now)
	sp.SetCount(2)
	sp.SetSum(1)
	q := sp.QuantileValues().AppendEmpty()
	q.SetQuantile(0.5)
	q.SetValue(math.Inf(1))
	d := ms.AppendEmpty()
	d.SetName("done")
	d.SetEmptySum().SetIsMonotonic(true)
	d.Sum().SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	dp := d.Sum().DataPoints().AppendEmpty()
	dp.SetIntValue(3)
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(now)
	dp.Attributes().PutStr("a.b", "1")
	dp.Attributes().PutStr("a_b", "2")
	md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetName("nameless.resource")
	return []pmetric.Metrics{md, otlpDeltaRequest("d", 1, 0, 10), pmetric.NewMetrics()}
}

// FuzzOTLPRoundTrip drives the OTLP endpoint with the real translation over
// a real store holding a baseline group (FuzzPushScrape's): an undecodable
// or refused request is answered 4xx with a google.rpc.Status and leaves
// the scrape unchanged, nothing is ever answered 5xx, a stored request is
// answered with an ExportMetricsServiceResponse and leaves every text and
// OpenMetrics scrape valid, and sending the same request again changes
// nothing (cumulative points replace themselves, delta windows are summed
// once).
func FuzzOTLPRoundTrip(f *testing.F) {
	for _, md := range otlpFuzzSeeds() {
		req := pmetricotlp.NewExportRequestFromMetrics(md)
		pb, err := req.MarshalProto()
		if err != nil {
			f.Fatal(err)
		}
		js, err := req.MarshalJSON()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(pb, false)
		f.Add(js, true)
	}
	f.Add([]byte(`{"resourceMetrics":[{"resource":{},"scopeMetrics":[{"metrics":[{"name":"x","gauge":{"dataPoints":[{"asInt":"7"}]}}]}]}]}`), true)
	f.Fuzz(func(t *testing.T, body []byte, json bool) {
		h, own := newReservedHandler(t)
		if w := do(t, h, http.MethodPut, "/metrics/job/base", []byte(fuzzBaseline), nil); w.Code != http.StatusOK {
			t.Fatalf("baseline push: %d %s", w.Code, w.Body)
		}
		enc := otlp.Protobuf
		if json {
			enc = otlp.JSON
		}
		before := scrapePushed(t, h, own)
		send := func() int {
			w := do(t, h, http.MethodPost, "/otlp/v1/metrics", body, map[string]string{"Content-Type": enc.MediaType()})
			switch {
			case w.Code == http.StatusOK:
				exportResponse(t, w, enc)
			case w.Code >= 400 && w.Code < 500:
				if enc == otlp.JSON {
					rpcStatus(t, w, enc)
				} else if err := proto.Unmarshal(w.Body.Bytes(), &rpcstatus.Status{}); err != nil {
					t.Fatalf("%d answer is no Status: %v", w.Code, err)
				}
			default:
				t.Fatalf("answered %d %q", w.Code, w.Body)
			}
			return w.Code
		}
		code := send()
		after := scrapePushed(t, h, own)
		requireUTF8Scrapes(t, h)
		if code != http.StatusOK {
			if before != after {
				t.Fatalf("refused with %d, yet the scrape changed:\nbefore:\n%s\nafter:\n%s", code, before, after)
			}
			return
		}
		send()
		if again := scrapePushed(t, h, own); again != after {
			t.Fatalf("the same request twice changed the scrape:\nonce:\n%s\ntwice:\n%s", after, again)
		}
		if strings.Contains(after, "\x00") {
			t.Fatalf("a NUL in the scrape:\n%s", after)
		}
	})
}
