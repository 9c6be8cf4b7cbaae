package scrape

import (
	"fmt"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/store"
)

// isProtoText reports whether f is one of the protobuf text formats
// (encoding=text, encoding=compact-text), debug formats the reference
// serves to clients that ask for them first. Nothing scrapes in them, so
// they have no cached bodies: each merged family is decoded whole and
// written as one MetricFamily message (writeProtoTextRun).
func isProtoText(f exposition.Format) bool {
	enc := f.Encoding()
	return enc == exposition.EncodingProtoText || enc == exposition.EncodingProtoCompactText
}

// writeProtoTextRun writes one merged family in a protobuf text format:
// one MetricFamily message with the built-in family's metrics, then every
// group's, decoded from their stored bytes. help, typ and unit are those
// writeRun chose by the merge rule of every format; a built-in family
// gives its own fields as they are (a HELP set empty is written empty). A
// family with no metrics is left out, and so is a stored family that does
// not decode (skip).
func (fw *familyWriter) writeProtoTextRun(name string, own *dto.MetricFamily, help string, typ dto.MetricType, unit string, run []store.Entry) error {
	mf := &dto.MetricFamily{Name: proto.String(name), Type: typ.Enum()}
	if own != nil {
		mf.Name, mf.Help, mf.Type, mf.Unit = own.Name, own.Help, own.Type, own.Unit
		mf.Metric = append(mf.Metric, own.Metric...)
	} else {
		if help != "" {
			mf.Help = proto.String(help)
		}
		if unit != "" {
			mf.Unit = proto.String(unit)
		}
	}
	for _, e := range run {
		decoded, err := e.Family().Decode()
		if err != nil {
			fw.skip(fmt.Errorf("group %s: %w", groupOfID(e.GroupID()), err))
			continue
		}
		mf.Metric = append(mf.Metric, decoded.Metric...)
	}
	if len(mf.Metric) == 0 {
		return nil
	}
	b, err := exposition.AppendProtoText(fw.buf[:0], mf, fw.f)
	if err != nil {
		fw.skip(fmt.Errorf("family %q: %w", name, err))
		return nil
	}
	fw.buf = b
	_, err = fw.w.Write(b)
	return err
}
