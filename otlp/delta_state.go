package otlp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// A family's delta state, as the store keeps it beside the family
// (store.Push.States): every accumulated series of the family with its
// summed value and the windows summed into it. The family served is built
// from it, so the state alone is the truth and the served family its view.
//
// Encoding: the version byte (1), the family's type as a uvarint, the
// series count, then per series the protobuf bytes of its dto.Metric
// (labels and summed value, created timestamp included) as a uvarint
// length and the bytes, the floor as a varint, the interval count, and each
// interval's start and end as varints (Unix nanoseconds).
const stateVersion = 1

// familyState is a decoded delta state.
type familyState struct {
	typ    dto.MetricType
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
	if len(b) < 1 || b[0] != stateVersion {
		return nil, errState
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
	n := uv()
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
			ss.windows.list = append(ss.windows.list, interval{start: sv(), end: sv()})
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
	b := []byte{stateVersion}
	b = binary.AppendUvarint(b, uint64(fs.typ))
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
