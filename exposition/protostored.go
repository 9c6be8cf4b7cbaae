package exposition

import (
	"fmt"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// StoredFamily is a family as a store keeps it: its name, HELP text, unit
// and type, and its metrics as protobuf bytes (the repeated field 4 of
// io.prometheus.client.MetricFamily, which is itself a valid MetricFamily
// message).
type StoredFamily struct {
	Name, Help, Unit string
	Type             dto.MetricType
	Metrics          []byte
}

// AppendStoredBody appends the body of f in fm to dst, as AppendBody
// appends that of the decoded family.
//
// The metrics are decoded into a pooled decoder's arenas by the reader
// pushes use (protoReader), with proto.Unmarshal only for what that reader
// leaves to it, and the memory goes back to the pool before the call
// returns. Rendering the 74-sample batch-job families as text this way
// takes 21 us and no allocation; decoding them with proto.Unmarshal into
// new dto objects, as scrapes rendered a family without a pushed body
// before, took 81 us, 737 allocations and 39 KB
// (BenchmarkAppendStoredBody, pooled against unmarshal).
func AppendStoredBody(dst []byte, f StoredFamily, fm Format) ([]byte, error) {
	d := protoDecoders.Get().(*protoDecoder)
	defer func() {
		d.rewind()
		d.put()
	}()
	d.r.hint = len(f.Metrics)/2 + 1 // Every object takes at least 2 bytes.
	var mf *dto.MetricFamily
	if pf, ok := d.r.family(f.Metrics); ok && pf.mf.Name == nil && pf.mf.Help == nil && pf.mf.Type == nil && pf.mf.Unit == nil {
		pf.name, pf.help, pf.unit, pf.typ = f.Name, f.Help, f.Unit, f.Type
		mf = &pf.mf
		mf.Name, mf.Type = &pf.name, &pf.typ
		if f.Help != "" {
			mf.Help = &pf.help
		}
		if f.Unit != "" {
			mf.Unit = &pf.unit
		}
	} else {
		// What the reader does not take (or stored bytes that carry a
		// family field of their own, which Unmarshal merges) decodes as
		// the family always did.
		var err error
		if mf, err = DecodeStored(f); err != nil {
			return dst, err
		}
	}
	return AppendBody(dst, mf, fm)
}

// DecodeStored returns f as a new dto family: its name, HELP text, unit and
// type, with its metrics decoded by proto.Unmarshal (which merges a family
// field the bytes carry).
func DecodeStored(f StoredFamily) (*dto.MetricFamily, error) {
	mf := &dto.MetricFamily{Name: proto.String(f.Name), Type: f.Type.Enum()}
	if f.Help != "" {
		mf.Help = proto.String(f.Help)
	}
	if f.Unit != "" {
		mf.Unit = proto.String(f.Unit)
	}
	if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(f.Metrics, mf); err != nil {
		return nil, fmt.Errorf("decode stored family %q: %w", f.Name, err)
	}
	return mf, nil
}
