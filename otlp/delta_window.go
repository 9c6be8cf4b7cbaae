package otlp

import "time"

// MaxWindows is how many summed intervals a series' state keeps. Windows
// that touch or overlap are merged into one interval, so a job that
// exports every period keeps one interval per process run; beyond
// MaxWindows the oldest interval is dropped and its end becomes the floor:
// a window ending at or before the floor is taken as summed already. So a
// retried request is never added twice, and a point older than everything
// the state remembers is refused rather than risked twice.
const MaxWindows = 32

// interval is one stretch (start, end] of time whose points were summed,
// in Unix nanoseconds.
type interval struct {
	start, end int64
}

// windows is a series' summed intervals, sorted, disjoint and not touching,
// and the floor below which everything counts as summed (0: none).
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
	return interval{start: start, end: end}
}

// overlaps reports whether iv overlaps a window already summed, or ends
// at or before the floor.
func (ws *windows) overlaps(iv interval) bool {
	if iv.end <= ws.floor {
		return true
	}
	for _, x := range ws.list {
		if iv.start < x.end && x.start < iv.end {
			return true
		}
	}
	return false
}

// add records iv (which overlaps nothing) as summed, merging it with the
// intervals it touches, and drops the oldest beyond MaxWindows.
func (ws *windows) add(iv interval) {
	i := 0
	for i < len(ws.list) && ws.list[i].end < iv.start {
		i++
	}
	// ws.list[i:] end at or after iv.start; they start at or after
	// iv.end since nothing overlaps.
	if i < len(ws.list) && ws.list[i].end == iv.start {
		iv.start = ws.list[i].start
		ws.list = append(ws.list[:i], ws.list[i+1:]...)
	}
	if i < len(ws.list) && ws.list[i].start == iv.end {
		iv.end = ws.list[i].end
		ws.list = append(ws.list[:i], ws.list[i+1:]...)
	}
	ws.list = append(ws.list, interval{})
	copy(ws.list[i+1:], ws.list[i:])
	ws.list[i] = iv
	for len(ws.list) > MaxWindows {
		ws.floor = max(ws.floor, ws.list[0].end)
		ws.list = append(ws.list[:0], ws.list[1:]...)
	}
}

// nanosTime returns the time of Unix nanoseconds n.
func nanosTime(n int64) time.Time { return time.Unix(0, n) }
