package otlp

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/store"
)

func addSummary(ms pmetric.MetricSlice, name string, quantiles ...float64) pmetric.SummaryDataPoint {
	m := ms.AppendEmpty()
	m.SetName(name)
	dp := m.SetEmptySummary().DataPoints().AppendEmpty()
	dp.SetStartTimestamp(testStart)
	dp.SetTimestamp(testTS)
	dp.SetCount(4)
	dp.SetSum(2.5)
	for _, q := range quantiles {
		v := dp.QuantileValues().AppendEmpty()
		v.SetQuantile(q)
		v.SetValue(q * 10)
	}
	return dp
}

func TestSummaries(t *testing.T) {
	md, ms := request("service.name", "svc")
	putAttrs(addSummary(ms, "rpc.duration", 0.5, 0.99).Attributes(), "quantile", "x", "k", "v")
	g := translateOne(t, md, nil)
	m := family(t, g, "rpc_duration").Metric[0]
	if labelString(m) != `{k="v"}` {
		t.Errorf("labels %s", labelString(m))
	}
	s := m.GetSummary()
	if s.GetSampleCount() != 4 || s.GetSampleSum() != 2.5 || len(s.Quantile) != 2 || s.Quantile[1].GetQuantile() != 0.99 || s.Quantile[1].GetValue() != 9.9 {
		t.Errorf("summary %v", s)
	}
	if !s.GetCreatedTimestamp().AsTime().Equal(testStart.AsTime()) {
		t.Errorf("created %v", s.GetCreatedTimestamp())
	}
}

func TestASummaryGivingAQuantileTwiceIsRefused(t *testing.T) {
	md, ms := request("service.name", "svc")
	addSummary(ms, "s", 0.5, 0.5)
	g := translateOne(t, md, nil)
	if g.Rejected != 1 || !strings.Contains(g.Reason, "quantile 0.5 twice") {
		t.Errorf("rejected %d: %s", g.Rejected, g.Reason)
	}
}

// negativeZeroSummaryRequest returns, in enc, a request whose one summary
// point has sum -0 and quantile 0.5 of value -0, written as an SDK's
// protobuf or JSON encoder writes them. pdata's own marshalers leave a
// summary's sum and quantile value out when they equal 0, -0 included, so
// they cannot build it: a receiver then reads +0.
func negativeZeroSummaryRequest(enc Encoding) []byte {
	if enc == JSON {
		return []byte(fmt.Sprintf(`{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},`+
			`"scopeMetrics":[{"metrics":[{"name":"s","summary":{"dataPoints":[{"timeUnixNano":"%d","count":"1","sum":-0,`+
			`"quantileValues":[{"quantile":0.5,"value":-0}]}]}}]}]}]}`, uint64(testTS)))
	}
	message := func(num protowire.Number, fields ...[]byte) []byte {
		var body []byte
		for _, f := range fields {
			body = append(body, f...)
		}
		b := protowire.AppendTag(nil, num, protowire.BytesType)
		return protowire.AppendBytes(b, body)
	}
	str := func(num protowire.Number, s string) []byte {
		b := protowire.AppendTag(nil, num, protowire.BytesType)
		return protowire.AppendString(b, s)
	}
	fixed := func(num protowire.Number, v uint64) []byte {
		b := protowire.AppendTag(nil, num, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, v)
	}
	negZero := math.Float64bits(math.Copysign(0, -1))
	// Field numbers of opentelemetry/proto/metrics/v1/metrics.proto.
	point := message(1, // Summary.data_points
		fixed(3, uint64(testTS)), // time_unix_nano
		fixed(4, 1),              // count
		fixed(5, negZero),        // sum
		message(6, fixed(1, math.Float64bits(0.5)), fixed(2, negZero)), // quantile_values
	)
	resource := message(1, message(1, str(1, "service.name"), message(2, str(1, "svc"))))
	metric := message(2, str(1, "s"), message(11, point)) // ScopeMetrics.metrics, Metric.summary
	return message(1, resource, message(2, metric))       // ResourceMetrics, its scope_metrics
}

func TestASummarysNegativeZeroIsKeptFromTheWireToTheStore(t *testing.T) {
	for _, enc := range []Encoding{Protobuf, JSON} {
		t.Run(enc.MediaType(), func(t *testing.T) {
			md, err := Decode(negativeZeroSummaryRequest(enc), enc)
			if err != nil {
				t.Fatal(err)
			}
			g := translateOne(t, md, nil)
			checkNegativeZero(t, "translated", family(t, g, "s").Metric[0].GetSummary())
			st := store.New(store.Options{})
			if _, err := st.Push(context.Background(), store.Push{Key: groupkey.New(g.Labels), Method: store.Merge, Families: g.Families, Time: testNow}); err != nil {
				t.Fatalf("push: %v", err)
			}
			sn := st.Snapshot()
			defer sn.Release()
			found := false
			sn.Ascend(func(e store.Entry) bool {
				if e.Name() != "s" {
					return true
				}
				found = true
				mf, err := e.Family().Decode()
				if err != nil {
					t.Fatalf("decode the stored family: %v", err)
				}
				checkNegativeZero(t, "stored", mf.Metric[0].GetSummary())
				return false
			})
			if !found {
				t.Fatal("the store holds no family s")
			}
		})
	}
}

// checkNegativeZero fails unless s's sum and its quantile's value are -0.
func checkNegativeZero(t *testing.T, where string, s *dto.Summary) {
	t.Helper()
	if len(s.GetQuantile()) != 1 {
		t.Fatalf("%s: summary %v, want one quantile", where, s)
	}
	if sum, v := s.GetSampleSum(), s.Quantile[0].GetValue(); sum != 0 || !math.Signbit(sum) || v != 0 || !math.Signbit(v) {
		t.Errorf("%s: sum %g, quantile value %g; want -0 for both", where, sum, v)
	}
}
