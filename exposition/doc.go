// Package exposition converts between the Prometheus exposition formats and
// the client_model representation: it decodes push bodies (text format 0.0.4
// and varint-delimited protobuf) into []*dto.MetricFamily, negotiates the
// scrape format, and renders scrape output as separate header and body
// blocks so that the store can cache the bodies of each group at push time
// and splice them together at scrape time.
//
// The text-based renderings are produced by prometheus/common's expfmt, so a
// response assembled from these blocks is byte-identical to what expfmt
// would render for the merged families.
package exposition
