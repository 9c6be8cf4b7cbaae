// Package exposition converts between the Prometheus exposition formats and
// the client_model representation: it decodes push bodies (text format 0.0.4
// and varint-delimited protobuf) into []*dto.MetricFamily, negotiates the
// scrape format, and renders scrape output as separate header and body
// blocks so that the store can cache the bodies of each group at push time
// and splice them together at scrape time.
//
// A response assembled from these blocks is byte-identical to what
// prometheus/common's expfmt renders for the merged families, except where
// expfmt writes a name invalidly: it quotes and escapes label names by the
// metric-name rule, which allows ':', and never escapes exemplar labels.
// Here every label name that is not a legacy label name is quoted (under
// escaping=allow-utf-8) or escaped (under the other schemes), so every
// response parses.
package exposition
