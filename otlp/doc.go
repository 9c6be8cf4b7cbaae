// Package otlp turns OTLP/HTTP metrics requests into the gateway's groups.
//
// A request is decoded once with the OpenTelemetry Collector's pdata
// (protobuf or OTLP JSON). Each ResourceMetrics becomes one group: its key
// comes from the request URL's grouping labels, or else from the resource
// (job from service.namespace/service.name, plus the attributes named by
// --otlp.group-by). Its metrics are translated exactly as Prometheus 3's
// OTLP receiver translates them (names, units and suffixes through
// github.com/prometheus/otlptranslator; sums, gauges, histograms,
// exponential histograms and summaries into families; target_info from the
// resource), so that what Prometheus scrapes from the gateway is what its
// own receiver would have stored. Delta points are not summed here: they
// are returned beside the families, with their windows, for Accumulate to
// add to the stored state of the group they belong to.
package otlp
