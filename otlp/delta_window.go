package otlp

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// MaxWindows is how many summed intervals a series' state keeps, of all
// sources together. Windows of one source that touch or overlap are merged
// into one interval, so a job that exports every period keeps one interval
// per process run; beyond MaxWindows the interval that ended first is
// dropped and its end becomes the floor: a window ending at or before the
// floor is taken as summed already, whatever its source. So a retried
// request is never added twice, and a point older than everything the state
// remembers is refused rather than risked twice. The cap and the floor are
// the series', not a source's, because every batch run brings a new source:
// per-source bounds would let the state grow by one source per run.
const MaxWindows = 32

// interval is one stretch (start, end] of time whose points were summed,
// in Unix nanoseconds, and the source (Window.Source) that sent them.
type interval struct {
	start, end int64
	source     uint64
}

// windows is a series' summed intervals, sorted by start then source, those
// of one source disjoint and not touching (those of different sources may
// overlap: two processes of one job running at once), and the floor below
// which everything counts as summed (0: none).
type windows struct {
	floor int64
	list  []interval
}

// span returns a point's window in Unix nanoseconds. A point without a
// start (or one not before its end) covers its end alone: only the same
// end is then recognized as a retry.
func span(w Window) interval {
	end := w.End.UnixNano()
	start := int64(0)
	if !w.Start.IsZero() {
		start = w.Start.UnixNano()
	}
	if w.Start.IsZero() || start >= end {
		start = end - 1
	}
	return interval{start: start, end: end, source: w.Source}
}

// overlaps reports whether iv overlaps a window its source summed already,
// or ends at or before the floor. A window of another source may overlap
// iv: it is another process's, not a retry of iv's.
func (ws *windows) overlaps(iv interval) bool {
	if iv.end <= ws.floor {
		return true
	}
	for _, x := range ws.list {
		if x.source == iv.source && iv.start < x.end && x.start < iv.end {
			return true
		}
	}
	return false
}

// add records iv (which overlaps nothing of its source) as summed, merging
// it with the intervals of its source it touches, and drops the intervals
// that ended first beyond MaxWindows.
func (ws *windows) add(iv interval) {
	kept := ws.list[:0]
	for _, x := range ws.list {
		switch {
		case x.source == iv.source && x.end == iv.start:
			iv.start = x.start
		case x.source == iv.source && x.start == iv.end:
			iv.end = x.end
		default:
			kept = append(kept, x)
		}
	}
	i := 0
	for i < len(kept) && (kept[i].start < iv.start || kept[i].start == iv.start && kept[i].source < iv.source) {
		i++
	}
	kept = append(kept, interval{})
	copy(kept[i+1:], kept[i:])
	kept[i] = iv
	for len(kept) > MaxWindows {
		first := 0
		for j, x := range kept {
			if x.end < kept[first].end {
				first = j
			}
		}
		ws.floor = max(ws.floor, kept[first].end)
		kept = append(kept[:first], kept[first+1:]...)
	}
	ws.list = kept
}

// nanosTime returns the time of Unix nanoseconds n.
func nanosTime(n int64) time.Time { return time.Unix(0, n) }

// resourceSource returns the Window.Source of a resource's points: the
// FNV-1a hash of its service.instance.id, 0 without one. The hash is
// stable across processes and restarts, since the states that hold it are
// journaled and replicated.
func resourceSource(res pcommon.Resource) uint64 {
	v, ok := res.Attributes().Get(attrServiceInstanceID)
	if !ok {
		return 0
	}
	id := v.AsString()
	if id == "" {
		return 0
	}
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= prime
	}
	return h
}
