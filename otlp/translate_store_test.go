package otlp

import (
	"context"

	dto "github.com/prometheus/client_model/go"
	"math"
	"math/rand/v2"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/store"
)

// randomRequest builds a request of every point kind with names that clash
// once translated, colliding attributes, exemplars, NaN and infinities,
// NoRecordedValue points and bad points, from seed.
func randomRequest(seed uint64) pmetric.Metrics {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	attrs := func(m pcommon.Map) {
		for n := r.IntN(4); n > 0; n-- {
			m.PutStr(pick("k", "a.b", "a_b", "_x", "1st", "le", "quantile", "job", "instance", "__name__", "ü", "http.method"), pick("", "v", "w", "ö"))
		}
	}
	exemplars := func(es pmetric.ExemplarSlice) {
		for n := r.IntN(3); n > 0; n-- {
			e := es.AppendEmpty()
			e.SetDoubleValue(float64(r.IntN(8)) / 2)
			e.SetTimestamp(testTS)
			e.SetTraceID(pcommon.TraceID{byte(r.IntN(256)), 1})
			e.FilteredAttributes().PutStr(pick("a.b", "a_b", "trace_id", "x"), "v")
		}
	}
	md := pmetric.NewMetrics()
	for nr := 1 + r.IntN(3); nr > 0; nr-- {
		rm := md.ResourceMetrics().AppendEmpty()
		ra := rm.Resource().Attributes()
		if r.IntN(6) > 0 {
			ra.PutStr("service.name", pick("svc", "other"))
		}
		if r.IntN(2) == 0 {
			ra.PutStr("service.instance.id", pick("u1", "u2"))
		}
		attrs(ra)
		for ns := 1 + r.IntN(2); ns > 0; ns-- {
			sm := rm.ScopeMetrics().AppendEmpty()
			sm.Scope().SetName(pick("", "lib"))
			for nm := r.IntN(6); nm > 0; nm-- {
				m := sm.Metrics().AppendEmpty()
				m.SetName(pick("x", "x.y", "x_y", "x_total", "x_count", "lat", "lat_bucket", "..."))
				m.SetUnit(pick("", "s", "1", "By"))
				temp := pmetric.AggregationTemporality(pick2(r, 1, 2, 2, 2, 0))
				npts := r.IntN(4)
				switch r.IntN(5) {
				case 0:
					g := m.SetEmptyGauge()
					for ; npts > 0; npts-- {
						dp := g.DataPoints().AppendEmpty()
						dp.SetTimestamp(testTS)
						dp.SetDoubleValue([]float64{1, math.NaN(), math.Inf(-1)}[r.IntN(3)])
						attrs(dp.Attributes())
						if r.IntN(6) == 0 {
							dp.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
						}
					}
				case 1:
					s := m.SetEmptySum()
					s.SetIsMonotonic(r.IntN(2) == 0)
					s.SetAggregationTemporality(temp)
					for ; npts > 0; npts-- {
						dp := s.DataPoints().AppendEmpty()
						dp.SetStartTimestamp(testStart)
						dp.SetTimestamp(testTS)
						dp.SetIntValue(int64(r.IntN(9)))
						attrs(dp.Attributes())
						exemplars(dp.Exemplars())
					}
				case 2:
					h := m.SetEmptyHistogram()
					h.SetAggregationTemporality(temp)
					for ; npts > 0; npts-- {
						dp := h.DataPoints().AppendEmpty()
						dp.SetTimestamp(testTS)
						nb := r.IntN(3)
						var total uint64
						for i := 0; i < nb; i++ {
							dp.ExplicitBounds().Append(float64(i))
						}
						for i := 0; i <= nb && (nb > 0 || r.IntN(2) == 0); i++ {
							c := uint64(r.IntN(3))
							total += c
							dp.BucketCounts().Append(c)
						}
						dp.SetCount(total + uint64(r.IntN(2)))
						attrs(dp.Attributes())
						exemplars(dp.Exemplars())
					}
				case 3:
					h := m.SetEmptyExponentialHistogram()
					h.SetAggregationTemporality(temp)
					for ; npts > 0; npts-- {
						dp := h.DataPoints().AppendEmpty()
						dp.SetTimestamp(testTS)
						dp.SetScale(int32(r.IntN(16) - 5))
						dp.Positive().SetOffset(int32(r.IntN(9) - 4))
						var total uint64
						for i := r.IntN(6); i > 0; i-- {
							c := uint64(r.IntN(2))
							total += c
							dp.Positive().BucketCounts().Append(c)
						}
						dp.SetCount(total)
						attrs(dp.Attributes())
						exemplars(dp.Exemplars())
					}
				case 4:
					s := m.SetEmptySummary()
					for ; npts > 0; npts-- {
						dp := s.DataPoints().AppendEmpty()
						dp.SetTimestamp(testTS)
						for _, q := range []float64{0.5, 0.9} {
							v := dp.QuantileValues().AppendEmpty()
							v.SetQuantile(q)
							v.SetValue(q)
						}
						attrs(dp.Attributes())
					}
				}
			}
		}
	}
	return md
}

func pick2(r *rand.Rand, xs ...int32) int32 { return xs[r.IntN(len(xs))] }

// checkStoreTakes pushes every translated group of md into a fresh store
// and fails on any refusal: a translation must never hand the store a
// family it refuses, or the whole group would be lost.
func checkStoreTakes(t *testing.T, md pmetric.Metrics, s Settings) {
	t.Helper()
	gs, err := translateOnce(md, nil, s, testNow)
	if err != nil {
		t.Fatalf("Translate: %v", err)
	}
	st := store.New(store.Options{UTF8Names: s.UTF8Names})
	for _, g := range gs {
		if g.Labels == nil {
			continue
		}
		fams := append([]*dto.MetricFamily(nil), g.Families...)
		for _, d := range g.Deltas {
			// The first point of each series, as the first of its sum.
			one := &dto.MetricFamily{Name: d.Family.Name, Help: d.Family.Help, Type: d.Family.Type, Unit: d.Family.Unit}
			seen := map[string]bool{}
			for _, m := range d.Family.Metric {
				if k := labelString(m); !seen[k] {
					seen[k] = true
					one.Metric = append(one.Metric, m)
				}
			}
			fams = append(fams, one)
		}
		if _, err := st.Push(context.Background(), store.Push{Key: groupkey.New(g.Labels), Method: store.Merge, Families: fams, Time: testNow}); err != nil {
			var jm pmetric.JSONMarshaler
			b, _ := jm.MarshalMetrics(md)
			t.Fatalf("the store refuses group %v: %v\nrequest: %s", g.Labels, err, b)
		}
	}
}

func TestTheStoreTakesEveryTranslatedGroup(t *testing.T) {
	settings := []Settings{
		{},
		{TranslationStrategy: "UnderscoreEscapingWithoutSuffixes", PromoteScopeMetadata: true},
		{TranslationStrategy: "NoUTF8EscapingWithSuffixes", UTF8Names: true, PromoteAllResourceAttributes: true},
		{TranslationStrategy: "NoTranslation", UTF8Names: true, KeepIdentifyingResourceAttributes: true},
		{UTF8Names: true, GroupBy: []string{"service.instance.id"}},
	}
	for seed := uint64(0); seed < 500; seed++ {
		checkStoreTakes(t, randomRequest(seed), settings[seed%uint64(len(settings))])
	}
}

func FuzzTranslate(f *testing.F) {
	for seed := uint64(0); seed < 20; seed++ {
		b, err := pmetricotlp.NewExportRequestFromMetrics(randomRequest(seed)).MarshalProto()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte, mode uint8) {
		req := pmetricotlp.NewExportRequest()
		if err := req.UnmarshalProto(body); err != nil {
			return
		}
		s := Settings{UTF8Names: mode&1 != 0, PromoteScopeMetadata: mode&2 != 0, PromoteAllResourceAttributes: mode&4 != 0}
		if s.UTF8Names && mode&8 != 0 {
			s.TranslationStrategy = "NoTranslation"
		}
		checkStoreTakes(t, req.Metrics(), s)
	})
}
