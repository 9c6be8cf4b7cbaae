package otlp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// A family's state, as the store keeps it beside every family the OTLP
// path stores (store.Push.States): the newest point timestamp of the
// family, and for a family of summed deltas every accumulated series with
// its summed value and the windows summed into it. The family served is
// built from it, so the state alone is the truth and the served family its
// view. A family stored as sent (cumulative points, gauges, summaries) has
// a state of no series: its time alone.
//
// Encoding: the version byte (2), the family's type as a uvarint, the
// newest point time as a varint (Unix nanoseconds, 0: none), the series
// count, then per series the protobuf bytes of its dto.Metric (labels and
// summed value, created timestamp included) as a uvarint length and the
// bytes, the floor as a varint, the interval count, and each interval's
// start and end as varints (Unix nanoseconds) and its source as 8 bytes,
// little-endian. The newest time comes first so that FamilyTime reads it
// without decoding the series.
const stateVersion = 2

// familyState is a decoded state.
type familyState struct {
	typ dto.MetricType
	// newest is the newest point time, Unix nanoseconds (0: none).
	newest int64
	series map[string]*seriesState
}

// seriesState is one accumulated series.
type seriesState struct {
	metric  *dto.Metric
	windows windows
}

// errState reports a state that does not decode.
var errState = errors.New("delta state is corrupt")

// decodeState decodes a family's state; nil is an empty state of type typ.
func decodeState(b []byte, typ dto.MetricType) (*familyState, error) {
	fs := &familyState{typ: typ, series: map[string]*seriesState{}}
	if b == nil {
		return fs, nil
	}
	if len(b) < 1 {
		return nil, errState
	}
	if b[0] != stateVersion {
		return nil, fmt.Errorf("%w: version %d, this gateway reads version %d", errState, b[0], stateVersion)
	}
	b = b[1:]
	uv := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	sv := func() int64 {
		v, n := binary.Varint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	fs.typ = dto.MetricType(uv())
	fs.newest = sv()
	n := uv()
	if b == nil {
		return nil, errState
	}
	for i := uint64(0); i < n; i++ {
		l := uv()
		if b == nil || uint64(len(b)) < l {
			return nil, errState
		}
		m := &dto.Metric{}
		if err := proto.Unmarshal(b[:l], m); err != nil {
			return nil, fmt.Errorf("%w: %v", errState, err)
		}
		b = b[l:]
		ss := &seriesState{metric: m}
		ss.windows.floor = sv()
		k := uv()
		if b == nil || k > uint64(len(b)) {
			return nil, errState
		}
		ss.windows.list = make([]interval, 0, k)
		for j := uint64(0); j < k; j++ {
			iv := interval{start: sv(), end: sv()}
			if len(b) < 8 {
				return nil, errState
			}
			iv.source = binary.LittleEndian.Uint64(b)
			b = b[8:]
			ss.windows.list = append(ss.windows.list, iv)
		}
		if b == nil {
			return nil, errState
		}
		fs.series[seriesKey(m)] = ss
	}
	return fs, nil
}

// encode returns the state's bytes, its series in key order.
func (fs *familyState) encode() ([]byte, error) {
	b := appendStateHeader(nil, fs.typ, fs.newest)
	b = binary.AppendUvarint(b, uint64(len(fs.series)))
	for _, k := range fs.keys() {
		ss := fs.series[k]
		mb, err := proto.Marshal(ss.metric)
		if err != nil {
			return nil, fmt.Errorf("encode delta state: %w", err)
		}
		b = binary.AppendUvarint(b, uint64(len(mb)))
		b = append(b, mb...)
		b = binary.AppendVarint(b, ss.windows.floor)
		b = binary.AppendUvarint(b, uint64(len(ss.windows.list)))
		for _, iv := range ss.windows.list {
			b = binary.AppendVarint(b, iv.start)
			b = binary.AppendVarint(b, iv.end)
			b = binary.LittleEndian.AppendUint64(b, iv.source)
		}
	}
	return b, nil
}

// keys returns the series keys, sorted.
func (fs *familyState) keys() []string {
	keys := make([]string, 0, len(fs.series))
	for k := range fs.series {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// seriesKey identifies a series of a family by its labels, sorted by name,
// an empty value being the same as an absent label (DESIGN §5).
func seriesKey(m *dto.Metric) string {
	pairs := make([]string, 0, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		if l.GetValue() != "" {
			pairs = append(pairs, l.GetName()+"\xff"+l.GetValue())
		}
	}
	slices.Sort(pairs)
	return strings.Join(pairs, "\xfe")
}

// appendStateHeader appends the version, type and newest time of a state.
func appendStateHeader(b []byte, typ dto.MetricType, newest int64) []byte {
	b = append(b, stateVersion)
	b = binary.AppendUvarint(b, uint64(typ))
	return binary.AppendVarint(b, newest)
}

// FamilyTime returns the newest point time a family's state holds, and
// false when it holds none: no state (a family a plain push stored), a
// state of points without timestamps, or one this gateway cannot read.
// It reads the state's header only.
func FamilyTime(state []byte) (time.Time, bool) {
	if len(state) < 1 || state[0] != stateVersion {
		return time.Time{}, false
	}
	b := state[1:]
	if _, n := binary.Uvarint(b); n > 0 {
		b = b[n:]
	} else {
		return time.Time{}, false
	}
	newest, n := binary.Varint(b)
	if n <= 0 || newest == 0 {
		return time.Time{}, false
	}
	return nanosTime(newest), true
}

// AppendFamilyState appends to b the state of a family stored as the
// request sent it (cumulative points, gauges, summaries, target_info): no
// series, and the newest point time of the request, or of stored (the
// family's state before, nil for none) when that is newer, so that a
// family's time never goes back. Appending lets a caller build the states
// of a request's families in one buffer (the store copies each state it
// keeps).
func AppendFamilyState(b, stored []byte, typ dto.MetricType, newest time.Time) []byte {
	n := unixNanos(newest)
	if t, ok := FamilyTime(stored); ok {
		n = max(n, t.UnixNano())
	}
	return binary.AppendUvarint(appendStateHeader(b, typ, n), 0)
}

// unixNanos returns t in Unix nanoseconds, 0 for the zero time.
func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
