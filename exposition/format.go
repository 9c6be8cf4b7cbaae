package exposition

import (
	"net/http"
	"strings"

	"github.com/munnerz/goautoneg"
	dto "github.com/prometheus/client_model/go"
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

// Negotiate chooses the scrape response format from the request's Accept
// header, as expfmt.NegotiateAccept does for OpenMetrics 1.0.0 and 0.0.1,
// protobuf delimited and text 0.0.4. The escaping= parameter is honoured; a
// text 1.0.0 request gets text 0.0.4 with the requested escaping, since
// expfmt has no separate text 1.0.0 renderer. Without a usable Accept header
// the result is text 0.0.4 with escaping=underscores.
func Negotiate(h http.Header) Format {
	// Classic text (or protobuf) whenever the scraper accepts it, even when
	// it prefers OpenMetrics: Prometheus 2 keeps the le and quantile label
	// values exactly as the scrape spells them, and OpenMetrics spells
	// le="1" as le="1.0", so preferring OpenMetrics would rename series that
	// the reference Pushgateway (which never serves OpenMetrics) exposes.
	// OpenMetrics goes to scrapers that accept nothing else. The protobuf
	// text and compact-text debugging formats are not rendered: a client
	// asking only for those gets the text format.
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
// f of the same Encoding reproduces when f.Plain holds.
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

// Plain reports whether rendering mf in f gives the same bytes as rendering
// it in NewFormat(f.Encoding()), that is whether name escaping is a no-op for
// mf in f. It holds when f asks for no escaping (escaping=allow-utf-8: names
// are then quoted where needed, in every encoding, exactly as the cached
// rendering quotes them) or when every name in mf is a legacy name, which
// every escaping scheme leaves alone (see LegacyNames).
func (f Format) Plain(mf *dto.MetricFamily) bool {
	return f.scheme == model.NoEscaping || legacyFamily(mf)
}

// LegacyNames reports whether every name in mf is a legacy name of its kind,
// so that no escaping scheme changes it and no format quotes it: the family
// name and any __name__ label value a legacy metric name
// ([a-zA-Z_:][a-zA-Z0-9_:]*), every label name, exemplar label names
// included, a legacy label name ([a-zA-Z_][a-zA-Z0-9_]*, no ':').
func LegacyNames(mf *dto.MetricFamily) bool {
	return legacyFamily(mf)
}

// legacyFamily is LegacyNames.
func legacyFamily(mf *dto.MetricFamily) bool {
	if !legacyName(mf.GetName()) {
		return false
	}
	for _, m := range mf.Metric {
		if !legacyMetric(m) {
			return false
		}
	}
	return true
}

// legacyMetric reports whether every name in m is a legacy name of its
// kind (see LegacyNames).
func legacyMetric(m *dto.Metric) bool {
	for _, lp := range m.Label {
		name := lp.GetName()
		if name == model.MetricNameLabel && !legacyName(lp.GetValue()) {
			return false
		}
		if !legacyLabelName(name) {
			return false
		}
	}
	return legacyExemplars(m)
}

// LegacyExemplarNames reports whether every exemplar label name in mf is a
// legacy label name: the part of LegacyNames that a check of the series'
// names leaves out, since exemplars are no part of a series.
func LegacyExemplarNames(mf *dto.MetricFamily) bool {
	for _, m := range mf.Metric {
		if !legacyExemplars(m) {
			return false
		}
	}
	return true
}

// legacyExemplars reports whether every exemplar label name in m (a
// counter's exemplar, a histogram's bucket and native exemplars) is a legacy
// label name. Exemplar labels are written in OpenMetrics and protobuf.
func legacyExemplars(m *dto.Metric) bool {
	if c := m.Counter; c != nil && c.Exemplar != nil && !legacyLabels(c.Exemplar.Label) {
		return false
	}
	if h := m.Histogram; h != nil {
		for _, b := range h.Bucket {
			if b.Exemplar != nil && !legacyLabels(b.Exemplar.Label) {
				return false
			}
		}
		for _, e := range h.Exemplars {
			if e != nil && !legacyLabels(e.Label) {
				return false
			}
		}
	}
	return true
}

// legacyLabels reports whether every name in labels is a legacy label name.
func legacyLabels(labels []*dto.LabelPair) bool {
	for _, lp := range labels {
		if !legacyLabelName(lp.GetName()) {
			return false
		}
	}
	return true
}
