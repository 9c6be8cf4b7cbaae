package otlp

import (
	"errors"
	"fmt"
	"mime"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// Encoding is the wire encoding of an OTLP/HTTP request, and of its answer:
// the specification has the server answer in the encoding it was sent.
type Encoding int

const (
	// Protobuf is application/x-protobuf, the binary protobuf encoding.
	Protobuf Encoding = iota
	// JSON is application/json, OTLP's own JSON mapping of protobuf (hex
	// trace and span ids, enums as integers, 64-bit integers as strings).
	JSON
)

// Media types of the two encodings.
const (
	ProtobufMediaType = "application/x-protobuf"
	JSONMediaType     = "application/json"
)

// ErrMediaType is returned for a Content-Type that is neither encoding.
var ErrMediaType = errors.New("unsupported media type: use " + ProtobufMediaType + " or " + JSONMediaType)

// ParseContentType returns the encoding a request's Content-Type names. It
// is parsed as a media type, so parameters (charset) and their order, and
// the case of the type, do not matter.
func ParseContentType(contentType string) (Encoding, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return 0, fmt.Errorf("%w (Content-Type %q: %v)", ErrMediaType, contentType, err)
	}
	switch mt {
	case ProtobufMediaType:
		return Protobuf, nil
	case JSONMediaType:
		return JSON, nil
	}
	return 0, fmt.Errorf("%w, not %q", ErrMediaType, mt)
}

// MediaType returns the media type of e, as a Content-Type.
func (e Encoding) MediaType() string {
	if e == JSON {
		return JSONMediaType
	}
	return ProtobufMediaType
}

// Decode decodes an ExportMetricsServiceRequest body with pdata's own
// unmarshalers (OTLP JSON is not protojson's mapping).
func Decode(body []byte, e Encoding) (pmetric.Metrics, error) {
	req := pmetricotlp.NewExportRequest()
	var err error
	if e == JSON {
		err = req.UnmarshalJSON(body)
	} else {
		err = req.UnmarshalProto(body)
	}
	if err != nil {
		return pmetric.Metrics{}, fmt.Errorf("decode OTLP %s request: %w", e.MediaType(), err)
	}
	return req.Metrics(), nil
}
