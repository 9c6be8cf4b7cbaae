package otlp

import (
	"fmt"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Accumulation is what AddDeltas makes of one group's delta families.
type Accumulation struct {
	// Families are the accumulated families, each complete: every series
	// the state holds, not only this request's, with its summed value.
	Families []*dto.MetricFamily
	// States are the families' new states, by family name, for the push
	// that stores Families (store.Push.States).
	States map[string][]byte
	// Skipped counts the points not added because their window overlaps
	// one summed already (a retry, or a window older than the state
	// remembers), and Reason names the first.
	Skipped int
	Reason  string
	// Resets counts the series restarted from a point that could not be
	// added: an explicit histogram whose bounds changed, or a native
	// histogram whose zero bucket changed.
	Resets int
}

// AddDeltas adds a group's delta points to the states its families hold
// (states: by family name, as the store returned them; nil entries are
// empty states) and returns the families to store with their new states.
// A point is added unless its window (start, end] overlaps a window summed
// already for its series: a retried request adds nothing. Counters (and
// the gauges of non-monotonic delta sums) add values; explicit histograms add bucket by bucket when their bounds match
// the sum's, and otherwise restart from the point; exponential (native)
// histograms are merged at the lower of the two scales. A series' created
// timestamp is the start of the first window summed into it. AddDeltas
// does not change deltas.
func AddDeltas(states map[string][]byte, deltas []DeltaFamily) (Accumulation, error) {
	acc := Accumulation{States: make(map[string][]byte, len(deltas))}
	for _, d := range deltas {
		mf := d.Family
		if len(d.Windows) != len(mf.GetMetric()) {
			return Accumulation{}, fmt.Errorf("delta family %q: %d windows for %d points", mf.GetName(), len(d.Windows), len(mf.GetMetric()))
		}
		fs, err := decodeState(states[mf.GetName()], mf.GetType())
		if err != nil || fs.typ != mf.GetType() {
			// A corrupt state, or one of another type (the family
			// changed kind): the sum starts again.
			fs, _ = decodeState(nil, mf.GetType())
		}
		for i, m := range mf.GetMetric() {
			if d.Windows[i].End.IsZero() {
				// Without an end there is no window to sum once.
				acc.skip(fmt.Sprintf("delta point of %s has no timestamp, so its window cannot be told from a retry's: not added", mf.GetName()))
				continue
			}
			acc.addPoint(fs, mf.GetName(), m, span(d.Windows[i]))
		}
		b, err := fs.encode()
		if err != nil {
			return Accumulation{}, fmt.Errorf("delta family %q: %w", mf.GetName(), err)
		}
		acc.States[mf.GetName()] = b
		acc.Families = append(acc.Families, fs.family(mf))
	}
	return acc, nil
}

// addPoint adds one point to its series of fs.
func (acc *Accumulation) addPoint(fs *familyState, name string, m *dto.Metric, iv interval) {
	key := seriesKey(m)
	ss := fs.series[key]
	if ss == nil {
		ss = &seriesState{metric: startMetric(m, iv)}
		ss.windows.add(iv)
		fs.series[key] = ss
		return
	}
	if ss.windows.overlaps(iv) {
		acc.skip(fmt.Sprintf("delta point of %s ending %s overlaps a window summed already (a retry): not added again",
			name, nanosTime(iv.end).UTC().Format(time.RFC3339Nano)))
		return
	}
	ss.windows.add(iv)
	if !addValue(ss.metric, m) {
		// The point cannot be added to the sum: the series restarts
		// from it, its created timestamp from its window.
		ss.metric = startMetric(m, iv)
		acc.Resets++
	}
}

// skip counts a point not added, and reason if it is the first.
func (acc *Accumulation) skip(reason string) {
	acc.Skipped++
	if acc.Reason == "" {
		acc.Reason = reason
	}
}

// startMetric returns the accumulated form of a series' first point: a
// copy with its window's start as the created timestamp and no sample
// timestamp.
func startMetric(m *dto.Metric, iv interval) *dto.Metric {
	c := proto.Clone(m).(*dto.Metric)
	c.TimestampMs = nil
	created := timestamppb.New(nanosTime(iv.start))
	switch {
	case c.Counter != nil:
		c.Counter.CreatedTimestamp = created
	case c.Histogram != nil:
		c.Histogram.CreatedTimestamp = created
	}
	return c
}

// addValue adds point p to the sum in m and reports whether it could.
func addValue(m, p *dto.Metric) bool {
	switch {
	case m.Counter != nil && p.Counter != nil:
		m.Counter.Value = proto.Float64(m.Counter.GetValue() + p.Counter.GetValue())
		if p.Counter.Exemplar != nil {
			m.Counter.Exemplar = p.Counter.Exemplar
		}
		return true
	case m.Gauge != nil && p.Gauge != nil:
		// A non-monotonic delta sum: summed as Prometheus' delta-to-
		// cumulative conversion sums it, and served as a gauge.
		m.Gauge.Value = proto.Float64(m.Gauge.GetValue() + p.Gauge.GetValue())
		return true
	case m.Histogram != nil && p.Histogram != nil:
		if isNative(m.Histogram) != isNative(p.Histogram) {
			return false
		}
		if isNative(p.Histogram) {
			return addNative(m.Histogram, p.Histogram)
		}
		return addClassic(m.Histogram, p.Histogram)
	}
	return false
}

// family returns the accumulated family: the header of the request's mf
// and every series of the state, in key order.
func (fs *familyState) family(mf *dto.MetricFamily) *dto.MetricFamily {
	out := &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Unit: mf.Unit}
	for _, k := range fs.keys() {
		m := proto.Clone(fs.series[k].metric).(*dto.Metric)
		servedClassic(m)
		out.Metric = append(out.Metric, m)
	}
	return out
}
