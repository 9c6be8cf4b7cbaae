package exposition

import (
	"net/http"
	"strings"

	"github.com/munnerz/goautoneg"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Encoding is an output wire format family. Formats of one Encoding render a
// family's samples identically, up to name escaping.
type Encoding int

const (
	// EncodingText is the Prometheus text format 0.0.4.
	EncodingText Encoding = iota
	// EncodingOpenMetrics is the OpenMetrics text format (1.0.0 and 0.0.1).
	EncodingOpenMetrics
	// EncodingProtobuf is the varint-delimited protobuf MetricFamily stream.
	EncodingProtobuf
	// EncodingProtoText is the protobuf text format (encoding=text), one
	// multi-line MetricFamily message per family (AppendProtoText).
	EncodingProtoText
	// EncodingProtoCompactText is the protobuf compact text format
	// (encoding=compact-text), one MetricFamily message per line.
	EncodingProtoCompactText
)

// String returns a short lower-case name for e, such as "text".
func (e Encoding) String() string {
	switch e {
	case EncodingText:
		return "text"
	case EncodingOpenMetrics:
		return "openmetrics"
	case EncodingProtobuf:
		return "protobuf"
	case EncodingProtoText:
		return "prototext"
	case EncodingProtoCompactText:
		return "protocompacttext"
	default:
		return "unknown"
	}
}

// Format is a negotiated scrape response format: an Encoding plus the name
// escaping scheme the scraper asked for. The zero value is not valid; use
// Negotiate or NewFormat.
type Format struct {
	contentType string
	enc         Encoding
	scheme      model.EscapingScheme
	// knownFields is set by WithKnownFields.
	knownFields bool
}

// WithKnownFields returns f for families whose messages hold no unknown
// protobuf fields (Decoded.KnownFields): protobuf encoding then skips
// looking for them, which took 5.8% of a text push's CPU (BenchmarkPush).
// Unknown fields in a family encoded this way are dropped.
func (f Format) WithKnownFields() Format {
	f.knownFields = true
	return f
}

// negotiateServed chooses the scrape response format among the ones
// scrapes are served in from cached bodies (Negotiate's choice when the
// client asks for no protobuf text format first), as expfmt.NegotiateAccept
// does for OpenMetrics 1.0.0 and 0.0.1, protobuf delimited and text 0.0.4.
// The escaping= parameter is honoured; a text 1.0.0 request gets text 0.0.4
// with the requested escaping, since expfmt's negotiation knows no text
// 1.0.0 format. Without a usable Accept header the result is text 0.0.4
// with escaping=underscores.
func negotiateServed(h http.Header) Format {
	// Classic text (or protobuf) whenever the scraper accepts it, even when
	// it prefers OpenMetrics: Prometheus 2 keeps the le and quantile label
	// values exactly as the scrape spells them, and OpenMetrics spells
	// le="1" as le="1.0", so preferring OpenMetrics would rename series that
	// the reference Pushgateway (which never serves OpenMetrics) exposes.
	// OpenMetrics goes to scrapers that accept nothing else.
	if acceptsClassic(h.Get("Accept")) {
		return newFormat(expfmt.NegotiateAccept(h, expfmt.FmtProtoDelim, expfmt.FmtText))
	}
	return newFormat(expfmt.NegotiateAccept(h,
		expfmt.FmtOpenMetrics_1_0_0,
		expfmt.FmtOpenMetrics_0_0_1,
		expfmt.FmtText,
	))
}

// acceptsClassic reports whether an Accept header allows the text format or
// protobuf (explicitly or through a wildcard), or is absent.
func acceptsClassic(accept string) bool {
	if strings.TrimSpace(accept) == "" {
		return true
	}
	for _, ac := range goautoneg.ParseAccept(accept) {
		if ac.Q <= 0 {
			continue
		}
		switch {
		case ac.Type == "*", ac.Type == "text" && (ac.SubType == "plain" || ac.SubType == "*"),
			ac.Type == "application" && ac.SubType == "vnd.google.protobuf":
			return true
		}
	}
	return false
}

// NewFormat returns the format of encoding enc with no name escaping
// (escaping=allow-utf-8): the rendering the store caches, which every format
// of the same Encoding reproduces for a family whose names are all legacy
// ones (LegacyNames).
func NewFormat(enc Encoding) Format {
	switch enc {
	case EncodingOpenMetrics:
		return noEscapingFormats[1]
	case EncodingProtobuf:
		return noEscapingFormats[2]
	default:
		return noEscapingFormats[0]
	}
}

// noEscapingFormats holds NewFormat's results for text, OpenMetrics and
// protobuf, built once and never changed: building one on each call
// (expfmt's WithEscapingScheme splits the content type) was 8% of a text
// push's CPU in a profile of decode plus store.Push.
var noEscapingFormats = [3]Format{
	newFormat(expfmt.FmtText.WithEscapingScheme(model.NoEscaping)),
	newFormat(expfmt.FmtOpenMetrics_1_0_0.WithEscapingScheme(model.NoEscaping)),
	newFormat(expfmt.FmtProtoDelim.WithEscapingScheme(model.NoEscaping)),
}

// newFormat converts a format produced by expfmt's negotiation.
func newFormat(ef expfmt.Format) Format {
	f := Format{contentType: string(ef), scheme: ef.ToEscapingScheme()}
	switch ef.FormatType() {
	case expfmt.TypeOpenMetrics:
		f.enc = EncodingOpenMetrics
	case expfmt.TypeProtoDelim:
		f.enc = EncodingProtobuf
	case expfmt.TypeProtoText:
		f.enc = EncodingProtoText
	case expfmt.TypeProtoCompact:
		f.enc = EncodingProtoCompactText
	default:
		f.enc = EncodingText
	}
	return f
}

// ContentType returns the exact Content-Type header value for a response in
// f, as expfmt spells it, for example
// "text/plain; version=0.0.4; charset=utf-8; escaping=underscores".
func (f Format) ContentType() string {
	return f.contentType
}

// Encoding returns f's wire format family.
func (f Format) Encoding() Encoding {
	return f.enc
}

// String returns f's Content-Type.
func (f Format) String() string {
	return f.contentType
}

// ExemplarMaxRunes is the most code points the label names and values of
// one exemplar may hold together (OpenMetrics 1.0: "MUST NOT exceed 128").
const ExemplarMaxRunes = 128
