package exposition

import (
	"fmt"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// A scrape response is assembled from blocks: for every merged family, one
// header (AppendHeader) followed by the bodies (AppendBody) of every group
// holding that family, and at the end one trailer (AppendTrailer). In
// protobuf each family is one delimited message, so the header and bodies
// are preceded by their total length (AppendFrameLength). The blocks are
// byte-identical to the corresponding parts of expfmt's rendering of the
// merged family.

// Protobuf field numbers of io.prometheus.client.MetricFamily.
const (
	fieldName   protowire.Number = 1
	fieldHelp   protowire.Number = 2
	fieldType   protowire.Number = 3
	fieldMetric protowire.Number = 4
	fieldUnit   protowire.Number = 5
)

// maxPooledBuffer is the largest capacity a read buffer may keep when it
// returns to its pool, so that one huge body does not pin its memory
// forever.
const maxPooledBuffer = 1 << 20

// AppendBody appends the rendering of mf's metrics in f, without any header
// lines (# HELP, # TYPE, # UNIT), applying f's name escaping, and returns the
// extended buffer; on error the buffer is returned as it was. Text and
// OpenMetrics bodies are the sample lines (see textrender.go); a protobuf
// body is the wire encoding of the MetricFamily field metric (4) for every
// metric of mf, so that a header and the bodies of many groups, framed with
// one length, form one valid delimited MetricFamily message. Native
// histograms survive intact in protobuf; text and OpenMetrics render their
// classic part, and OpenMetrics 1.0 refuses float histograms. A family
// without metrics renders as nothing.
//
// Every name is written validly: under escaping=allow-utf-8, a metric name
// that is not a legacy metric name and a label name that is not a legacy
// label name are quoted in text and OpenMetrics; under the other schemes
// they are escaped (EscapeMetricName, EscapeLabelName) in every encoding,
// exemplar labels included, so that the output holds only legacy names.
func AppendBody(dst []byte, mf *dto.MetricFamily, f Format) ([]byte, error) {
	if len(mf.Metric) == 0 {
		return dst, nil
	}
	name := mf.GetName()
	if f.scheme != model.NoEscaping && !LegacyNames(mf) {
		// Slow path: a copy of the family with its names escaped. Plain
		// families (every push without UTF-8 names) never come here.
		mf = escapeFamily(mf, f.scheme)
	}
	var err error
	start := len(dst)
	switch f.enc {
	case EncodingProtobuf:
		return appendMetricFields(dst, mf, f.knownFields)
	case EncodingOpenMetrics:
		dst, err = appendOpenMetricsSamples(dst, mf)
	default:
		dst, err = appendTextSamples(dst, mf)
	}
	if err != nil {
		return dst[:start], fmt.Errorf("render family %q as %s: %w", name, f.enc, err)
	}
	return dst, nil
}

// appendMetricFields appends field 4 of MetricFamily for each metric of mf.
// On error dst is returned as it was.
func appendMetricFields(dst []byte, mf *dto.MetricFamily, known bool) ([]byte, error) {
	first := len(dst)
	for i, m := range mf.Metric {
		var ok bool
		if dst, ok = appendMetricFast(dst, m, known); ok {
			continue
		}
		size := proto.MarshalOptions{Deterministic: true}.Size(m)
		dst = protowire.AppendTag(dst, fieldMetric, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(size))
		start := len(dst)
		var err error
		// Size has just filled the size caches; reuse them.
		dst, err = proto.MarshalOptions{Deterministic: true, UseCachedSize: true}.MarshalAppend(dst, m)
		if err != nil {
			return dst[:first], fmt.Errorf("marshal metric %d of family %q: %w", i, mf.GetName(), err)
		}
		if got := len(dst) - start; got != size {
			return dst[:first], fmt.Errorf("marshal metric %d of family %q: %d bytes written, %d announced", i, mf.GetName(), got, size)
		}
	}
	return dst, nil
}

// AppendHeader appends the header of one merged family named name in f and
// returns the extended buffer. Text: "# HELP name help\n" (only when help is
// not empty) and "# TYPE name type\n". OpenMetrics: the same, with the name
// and type expfmt uses for OpenMetrics (a counter's "_total" suffix is cut,
// and a counter without it is "unknown"), then "# UNIT name unit\n" when unit
// is not empty. Protobuf: the wire encoding of the MetricFamily fields name
// (1), help (2, only when not empty), type (3) and unit (5, only when not
// empty), without a length prefix. The name is escaped per f and HELP text
// is escaped exactly as expfmt escapes it.
func AppendHeader(dst []byte, name, help string, typ dto.MetricType, unit string, f Format) []byte {
	if f.scheme != model.NoEscaping && !legacyName(name) {
		name = model.EscapeName(name, f.scheme)
	}
	switch f.enc {
	case EncodingProtobuf:
		dst = protowire.AppendTag(dst, fieldName, protowire.BytesType)
		dst = protowire.AppendString(dst, name)
		if help != "" {
			dst = protowire.AppendTag(dst, fieldHelp, protowire.BytesType)
			dst = protowire.AppendString(dst, help)
		}
		dst = protowire.AppendTag(dst, fieldType, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(int64(typ)))
		if unit != "" {
			dst = protowire.AppendTag(dst, fieldUnit, protowire.BytesType)
			dst = protowire.AppendString(dst, unit)
		}
		return dst
	case EncodingOpenMetrics:
		compliant := name
		typeName := openMetricsTypeName(typ)
		if typ == dto.MetricType_COUNTER {
			if trimmed, ok := strings.CutSuffix(name, "_total"); ok {
				compliant = trimmed
			} else {
				typeName = "unknown"
			}
		}
		if help != "" {
			dst = appendCommentLine(dst, "# HELP ", compliant, help, true)
		}
		dst = appendCommentLine(dst, "# TYPE ", compliant, typeName, false)
		if unit != "" {
			dst = appendCommentLine(dst, "# UNIT ", compliant, unit, true)
		}
		return dst
	default:
		if help != "" {
			dst = appendCommentLine(dst, "# HELP ", name, help, false)
		}
		return appendCommentLine(dst, "# TYPE ", name, textTypeName(typ), false)
	}
}

// AppendHeaderWithoutType appends the header of one merged family named
// name in OpenMetrics, leaving its type unknown by writing no TYPE line:
// "# HELP name help\n" (only when help is not empty) and "# UNIT name
// unit\n" (only when unit is not empty), under the full name (no "_total"
// cut). A family without a TYPE line is of type unknown in OpenMetrics, and
// its samples then carry its name exactly. Unlike "# TYPE name unknown",
// this also passes promtool check metrics, which reads OpenMetrics with the
// text format's parser, where "unknown" is no type; and with HELP, the
// family cannot be taken for a part of the family before it. In the other
// encodings it is AppendHeader with dto.MetricType_UNTYPED.
func AppendHeaderWithoutType(dst []byte, name, help, unit string, f Format) []byte {
	if f.enc != EncodingOpenMetrics {
		return AppendHeader(dst, name, help, dto.MetricType_UNTYPED, unit, f)
	}
	if f.scheme != model.NoEscaping && !legacyName(name) {
		name = model.EscapeName(name, f.scheme)
	}
	if help != "" {
		dst = appendCommentLine(dst, "# HELP ", name, help, true)
	}
	if unit != "" {
		dst = appendCommentLine(dst, "# UNIT ", name, unit, true)
	}
	return dst
}

// appendCommentLine appends keyword, name (quoted when it is not a legacy
// name), a space, text (escaped; with '"' escaped too when quoteText) and a
// newline.
func appendCommentLine(dst []byte, keyword, name, text string, quoteText bool) []byte {
	dst = append(dst, keyword...)
	dst = appendName(dst, name)
	dst = append(dst, ' ')
	dst = appendEscaped(dst, text, quoteText)
	return append(dst, '\n')
}

// appendName appends name as expfmt writes it in comment lines: bare when it
// passes the legacy metric-name check, otherwise double-quoted and escaped.
func appendName(dst []byte, name string) []byte {
	if legacyName(name) {
		return append(dst, name...)
	}
	dst = append(dst, '"')
	dst = appendEscaped(dst, name, true)
	return append(dst, '"')
}

// appendEscaped appends s with '\\' and '\n' escaped, and '"' too when
// quote is set: the escaping expfmt applies to HELP text (text format: no
// quote) and to quoted names, OpenMetrics HELP and UNIT text (quote).
func appendEscaped(dst []byte, s string, quote bool) []byte {
	// Fast path: almost no HELP text needs escaping, so copy it whole.
	if !strings.ContainsAny(s, "\\\n\"") {
		return append(dst, s...)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			dst = append(dst, '\\', '\\')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '"' && quote:
			dst = append(dst, '\\', '"')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// textTypeName is the TYPE keyword of typ in the text format, which has no
// gauge histogram: expfmt renders it as a histogram.
func textTypeName(typ dto.MetricType) string {
	switch typ {
	case dto.MetricType_COUNTER:
		return "counter"
	case dto.MetricType_GAUGE:
		return "gauge"
	case dto.MetricType_SUMMARY:
		return "summary"
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		return "histogram"
	default:
		return "untyped"
	}
}

// openMetricsTypeName is the TYPE keyword of typ in OpenMetrics, before the
// counter-without-_total rule of AppendHeader.
func openMetricsTypeName(typ dto.MetricType) string {
	switch typ {
	case dto.MetricType_COUNTER:
		return "counter"
	case dto.MetricType_GAUGE:
		return "gauge"
	case dto.MetricType_SUMMARY:
		return "summary"
	case dto.MetricType_HISTOGRAM:
		return "histogram"
	case dto.MetricType_GAUGE_HISTOGRAM:
		return "gaugehistogram"
	default:
		return "unknown"
	}
}

// AppendFrameLength appends the varint length that frames one delimited
// protobuf MetricFamily message of n bytes (header plus bodies). Only
// protobuf responses are framed: callers skip it for other encodings.
func AppendFrameLength(dst []byte, n int) []byte {
	return protowire.AppendVarint(dst, uint64(n))
}

// AppendTrailer appends what ends a whole response in f: "# EOF\n" for
// OpenMetrics, nothing for the other encodings.
func AppendTrailer(dst []byte, f Format) []byte {
	if f.enc == EncodingOpenMetrics {
		return append(dst, "# EOF\n"...)
	}
	return dst
}
