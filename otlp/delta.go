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
	// Families are the accumulated families that changed, each complete:
	// every series the state holds, not only this request's, with its
	// summed value. A family to which the request added nothing (a retry)
	// is left out: the stored family and its state stay as they are.
	Families []*dto.MetricFamily
	// States are the new states of Families, by family name, for the push
	// that stores Families (store.Push.States).
	States map[string][]byte
	// Skipped counts the points not added because their window overlaps
	// one their source summed already (a retry), or is older than the
	// state remembers, and Reason names the first.
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
// A point is added unless its window (start, end] overlaps a window its
// source (Window.Source: the process that sent it) summed already for its
// series, or ends at or before the state's floor (see MaxWindows): a
// retried request adds nothing, while the overlapping windows of two
// processes running at once are both added. The family's newest point
// time is the newest window end summed. Counters (and
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
		stored := states[mf.GetName()]
		fs, err := decodeState(stored, mf.GetType())
		// A new family, a corrupt state, or one of another type (the
		// family changed kind) is stored whatever the points bring.
		changed := stored == nil || err != nil || fs.typ != mf.GetType()
		if err != nil || fs.typ != mf.GetType() {
			// The sum starts again.
			fs, _ = decodeState(nil, mf.GetType())
		}
		for i, m := range mf.GetMetric() {
			if d.Windows[i].End.IsZero() {
				// Without an end there is no window to sum once.
				acc.skip(fmt.Sprintf("delta point of %s has no timestamp, so its window cannot be told from a retry's: not added", mf.GetName()))
				continue
			}
			iv := span(d.Windows[i])
			if acc.addPoint(fs, mf.GetName(), m, iv) {
				fs.newest = max(fs.newest, iv.end)
				changed = true
			}
		}
		if !changed {
			continue
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

// addPoint adds one point to its series of fs and reports whether it did.
func (acc *Accumulation) addPoint(fs *familyState, name string, m *dto.Metric, iv interval) bool {
	key := seriesKey(m)
	ss := fs.series[key]
	if ss == nil {
		ss = &seriesState{metric: startMetric(m, iv)}
		ss.windows.add(iv)
		fs.series[key] = ss
		return true
	}
	end := nanosTime(iv.end).UTC().Format(time.RFC3339Nano)
	if iv.end <= ss.windows.floor {
		acc.skip(fmt.Sprintf("delta point of %s ending %s is older than the %d windows its series remembers, so it may have been summed already: not added",
			name, end, MaxWindows))
		return false
	}
	if ss.windows.overlaps(iv) {
		acc.skip(fmt.Sprintf("delta point of %s ending %s overlaps a window this process summed already (a retried export): not added again",
			name, end))
		return false
	}
	ss.windows.add(iv)
	if !addValue(ss.metric, m) {
		// The point cannot be added to the sum: the series restarts
		// from it, its created timestamp from its window.
		ss.metric = startMetric(m, iv)
		acc.Resets++
	}
	return true
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
