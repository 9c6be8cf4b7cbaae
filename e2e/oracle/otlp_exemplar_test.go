package oracle

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
)

// expectedExemplars returns the exemplars the gateway should serve on the
// series of s, rendered, out of those Prometheus' translator appends with
// it (sorted as Prometheus appends them: timestamp, value, labels): all of
// them on a native histogram, the last one on a counter or a classic
// bucket (one client_model metric carries one; documented), none
// elsewhere. Exemplar label names are sanitised as label names unless
// names are UTF-8 (documented: Prometheus keeps them as sent).
func expectedExemplars(s otlpSample, ex []exemplar.Exemplar, namer *otlptranslator.LabelNamer) []string {
	if len(ex) == 0 {
		return nil
	}
	name := s.ls.Get(model.MetricNameLabel)
	switch {
	case s.h != nil:
	case name == s.family+"_bucket", name == s.family && (s.typ == model.MetricTypeCounter || s.typ == model.MetricTypeUnknown):
		ex = ex[len(ex)-1:]
	default:
		return nil
	}
	out := make([]string, 0, len(ex))
	for _, e := range ex {
		b := labels.NewScratchBuilder(e.Labels.Len())
		e.Labels.Range(func(l labels.Label) {
			n := l.Name
			if namer != nil {
				if sanitised, err := namer.Build(n); err == nil {
					n = sanitised
				}
			}
			b.Add(n, l.Value)
		})
		b.Sort()
		out = append(out, exemplarString(b.Labels(), e.Value, e.Ts, e.HasTs))
	}
	sort.Strings(out)
	return out
}

// exemplarString renders one exemplar for comparisons.
func exemplarString(ls labels.Labels, v float64, ts int64, hasTs bool) string {
	s := ls.String() + " " + floatString(v)
	if hasTs {
		s += fmt.Sprintf(" @%d", ts)
	}
	return s
}

// withExemplars appends rendered exemplars to a rendered value.
func withExemplars(value string, ex []string) string {
	if len(ex) == 0 {
		return value
	}
	return value + " # " + strings.Join(ex, " # ")
}

// scrapedExemplars decodes a protobuf scrape with expfmt and returns the
// exemplars of each series, by identity, rendered and sorted. Prometheus
// 3's textparse is not used here: in v0.316.0 it returns the exemplars of
// the first native histogram of a family only (the next metric's are
// skipped), which would hide what the gateway serves.
func scrapedExemplars(body []byte, contentType string, keepInstance bool) (map[string][]string, error) {
	mfs, err := decodeProtobuf(body, contentType)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	add := func(name string, m *dto.Metric, extra []string, exs ...*dto.Exemplar) {
		b := labels.NewScratchBuilder(len(m.GetLabel()) + 2)
		b.Add(model.MetricNameLabel, name)
		for _, lp := range m.GetLabel() {
			b.Add(lp.GetName(), lp.GetValue())
		}
		for i := 0; i+1 < len(extra); i += 2 {
			b.Add(extra[i], extra[i+1])
		}
		b.Sort()
		id := otlpIdentity(b.Labels(), keepInstance)
		for _, e := range exs {
			if e == nil {
				continue
			}
			eb := labels.NewScratchBuilder(len(e.GetLabel()))
			for _, lp := range e.GetLabel() {
				eb.Add(lp.GetName(), lp.GetValue())
			}
			eb.Sort()
			ts := e.GetTimestamp()
			out[id] = append(out[id], exemplarString(eb.Labels(), e.GetValue(), ts.AsTime().UnixMilli(), ts != nil))
		}
		sort.Strings(out[id])
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				add(mf.GetName(), m, nil, m.GetCounter().GetExemplar())
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				h := m.GetHistogram()
				if h.Schema != nil || h.ZeroThreshold != nil || len(h.GetPositiveSpan())+len(h.GetNegativeSpan()) > 0 {
					add(mf.GetName(), m, nil, h.GetExemplars()...)
					continue
				}
				for _, bk := range h.GetBucket() {
					add(mf.GetName()+"_bucket", m, []string{model.BucketLabel, strconv.FormatFloat(bk.GetUpperBound(), 'g', -1, 64)}, bk.GetExemplar())
				}
			}
		}
	}
	return out, nil
}
