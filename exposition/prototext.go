package exposition

// The protobuf text formats, encoding=text and encoding=compact-text: debug
// formats the reference serves to clients that ask for them first (curl,
// scripts, people). Nothing scrapes in them, so they have no cached
// bodies: a scrape decodes each merged family whole and writes it with
// AppendProtoText.

import (
	"net/http"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/encoding/prototext"
)

// Negotiate chooses a scrape response's format from the request's Accept
// header: a protobuf text format when the header asks for one before any
// other format the gateway serves, with the escaping= it asks for, the way
// the reference negotiates it; otherwise one of the formats served from
// cached bodies (negotiateServed), which a header naming none of the
// protobuf text formats, the common case, reaches after two substring
// searches.
func Negotiate(h http.Header) Format {
	accept := h.Get("Accept")
	if !strings.Contains(accept, "vnd.google.protobuf") || !strings.Contains(accept, "text") {
		return negotiateServed(h)
	}
	ef := expfmt.NegotiateAccept(h,
		expfmt.FmtProtoDelim, expfmt.FmtProtoText, expfmt.FmtProtoCompact, expfmt.FmtText,
		expfmt.FmtOpenMetrics_1_0_0, expfmt.FmtOpenMetrics_0_0_1)
	switch ef.FormatType() {
	case expfmt.TypeProtoText, expfmt.TypeProtoCompact:
		return newFormat(ef)
	}
	return negotiateServed(h)
}

// AppendProtoText appends mf, with its names escaped under f's scheme
// (EscapeFamily), as one MetricFamily message in the protobuf text syntax
// followed by a newline: on several lines for encoding=text, on one for
// compact-text, as the reference writes them. mf is not modified.
func AppendProtoText(dst []byte, mf *dto.MetricFamily, f Format) ([]byte, error) {
	opts := prototext.MarshalOptions{Multiline: f.enc == EncodingProtoText}
	dst, err := opts.MarshalAppend(dst, EscapeFamily(mf, f.scheme))
	if err != nil {
		return dst, err
	}
	return append(dst, '\n'), nil
}
