// Package exposition converts between the Prometheus exposition formats and
// the client_model representation: it decodes push bodies (text format 0.0.4
// and varint-delimited protobuf) into []*dto.MetricFamily, negotiates the
// scrape format, renders scrape output as separate header and body blocks
// (so that a family's body can be rendered once and kept, which package
// render does, and package scrape merges the kept bodies of every group
// under one header per name),
// reads a kept protobuf body in place (protobody.go), and holds the name
// rules (validation, escaping, quoting, plain families).
//
// The decoders and renderers are this package's own, written for speed
// (see textparse.go, protoreader.go, textrender.go and protoenc.go), and
// expfmt (prometheus/common) and the protobuf library are the references
// they are held to by differential tests and fuzzers. Decoding gives
// exactly what expfmt's text parser or proto.Unmarshal gives, and hands a
// body or message to them only for what the fast readers leave out (quoted
// UTF-8 names in text, protobuf fields a push rarely uses); likewise the
// protobuf encoder leaves such metrics to proto.Marshal. Negotiation and
// content types are expfmt's. A response assembled from
// the blocks is byte-identical to what expfmt renders for the merged
// families, except where expfmt writes a name invalidly: it quotes and
// escapes label names by the metric-name rule, which allows ':', and never
// escapes exemplar labels. Here every label name that is not a legacy label
// name is quoted (under escaping=allow-utf-8) or escaped (under the other
// schemes), so every response parses.
//
// The protobuf text debugging formats (encoding=text and compact-text) are
// negotiated here too (Negotiate) and rendered one merged family at
// a time (AppendProtoText) for package scrape's writer.
package exposition
