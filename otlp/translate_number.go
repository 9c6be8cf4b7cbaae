package otlp

import (
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// pointContext is what the points of one metric share.
type pointContext struct {
	tr       *translation
	g        *groupBuilder
	r        *resourceState
	scope    labelList
	f        *familyBuilder
	otelName string
}

// refuse refuses one point for err, naming the metric.
func (p *pointContext) refuse(err error) {
	p.g.refuse(1, fmt.Sprintf("metric %q: %v", p.otelName, err))
}

// checkTime refuses a point timestamp more than 10 minutes ahead of the
// gateway's clock, as Prometheus' receiver refuses such a sample, and
// otherwise notes it in the family's newest point time (Group.Times).
func (p *pointContext) checkTime(ts pcommon.Timestamp) error {
	if ts > p.tr.maxTime {
		return fmt.Errorf("a point's timestamp %s is more than %s ahead of the gateway's clock", ts.AsTime().UTC().Format(time.RFC3339Nano), maxAheadTime)
	}
	p.f.newest = max(p.f.newest, ts)
	return nil
}

// labels returns a point's series labels as Prometheus builds them: the
// point's attributes (see attrLabels), promoted resource attributes whose
// label the attributes did not set, then the scope's labels; without what
// the gateway leaves out (see resourceState.finish) and extra, the le or
// quantile label Prometheus overwrites. The result is scratch space, valid
// until the next call.
func (p *pointContext) labels(attrs pcommon.Map, extra string) (labelList, error) {
	tr := p.tr
	ls, sorted, err := tr.t.attrLabels(tr.labels[:0], tr.sorted, attrs, ignoreNameAttr)
	tr.sorted = sorted
	if err != nil {
		tr.labels = ls
		return nil, err
	}
	for _, l := range p.r.promoted {
		if ls.get(l.name) == "" {
			ls.set(l.name, l.value)
		}
	}
	for _, l := range p.scope {
		ls.set(l.name, l.value)
	}
	full := ls
	ls, err = p.r.finish(ls, extra)
	tr.labels = full[:0]
	if err == nil {
		err = tr.checkLabelNames(ls)
	}
	return ls, err
}

// begin does what every point's translation starts with: it refuses a
// point from the future or with labels the gateway cannot store, removes
// the series of a NoRecordedValue point, and otherwise returns the point's
// labels (see labels; extra is dropped) and true, when the point is to be
// translated.
func (p *pointContext) begin(ts pcommon.Timestamp, attrs pcommon.Map, extra string, flags pmetric.DataPointFlags) (labelList, bool) {
	if err := p.checkTime(ts); err != nil {
		p.refuse(err)
		return nil, false
	}
	ls, err := p.labels(attrs, extra)
	if err != nil {
		p.refuse(err)
		return nil, false
	}
	if flags.NoRecordedValue() {
		p.tr.remove(p.g, p.f, ls)
		return nil, false
	}
	return ls, true
}

// window returns a delta point's window, or nil for a cumulative point.
func (p *pointContext) window(start, end pcommon.Timestamp) *Window {
	if !p.f.delta {
		return nil
	}
	return &Window{Start: timeOf(start), End: timeOf(end), Source: p.tr.source}
}

// timeOf converts a point time, 0 meaning unset (the zero time.Time).
func timeOf(ts pcommon.Timestamp) time.Time {
	if ts == 0 {
		return time.Time{}
	}
	return ts.AsTime()
}

// created returns a cumulative point's start time as a created timestamp,
// nil when it is unset or the point is a delta (whose window says it).
func (p *pointContext) created(start pcommon.Timestamp) *timestamppb.Timestamp {
	if start == 0 || p.f.delta {
		return nil
	}
	ts := p.tr.arena.times.new()
	ts.Seconds = int64(start / 1e9)
	ts.Nanos = int32(start % 1e9)
	return ts
}

// numbers translates gauge and sum points: a gauge or a non-monotonic sum
// into gauges, a monotonic sum into counters carrying their start time as
// created timestamp and their latest exemplar. A point with no value is
// 0, as Prometheus stores it. A sum's exemplars are read (and one without
// value refuses its point, as in Prometheus) even where a gauge cannot
// carry them.
func (p *pointContext) numbers(pts pmetric.NumberDataPointSlice, sum, monotonic bool) {
	a := &p.tr.arena
	for i := 0; i < pts.Len(); i++ {
		pt := pts.At(i)
		ls, ok := p.begin(pt.Timestamp(), pt.Attributes(), "", pt.Flags())
		if !ok {
			continue
		}
		var v float64
		switch pt.ValueType() {
		case pmetric.NumberDataPointValueTypeInt:
			v = float64(pt.IntValue())
		case pmetric.NumberDataPointValueTypeDouble:
			v = pt.DoubleValue()
		}
		var exs []exemplarRef
		if sum {
			var err error
			if exs, err = p.exemplars(pt.Exemplars()); err != nil {
				p.refuse(err)
				continue
			}
		}
		m := a.metrics.new()
		if monotonic {
			c := a.counters.new()
			c.Value = a.float(v)
			c.CreatedTimestamp = p.created(pt.StartTimestamp())
			if len(exs) > 0 {
				c.Exemplar = p.dtoExemplar(p.tr.t.latest(exs))
			}
			m.Counter = c
		} else {
			g := a.gauges.new()
			g.Value = a.float(v)
			m.Gauge = g
		}
		p.tr.add(p.g, p.f, ls, m, p.window(pt.StartTimestamp(), pt.Timestamp()))
	}
}
