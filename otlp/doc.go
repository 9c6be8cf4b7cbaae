// Package otlp turns OTLP/HTTP metrics requests into the gateway's groups.
//
// A request is decoded once with the OpenTelemetry Collector's pdata
// (protobuf or OTLP JSON). Each ResourceMetrics maps to one group: its key
// comes from the request URL's grouping labels, or else from the resource
// (job from service.namespace/service.name, plus the attributes named by
// --otlp.group-by); resources of one key make one group. Its metrics are
// translated as Prometheus 3's OTLP receiver (v3.16) translates them, with
// the defaults of Prometheus' otlp: block (names, units and suffixes
// through github.com/prometheus/otlptranslator; label names sanitised with
// label_name_underscore_sanitization and
// label_name_preserve_multiple_underscores on; sums, gauges, histograms,
// exponential histograms and summaries into families; target_info from the
// resource), straight from pdata into client_model messages, so that what
// Prometheus scrapes from the gateway is what its own receiver would have
// stored. Delta points are not summed here: they are returned beside the
// families, with their windows, for Accumulate to add to the stored state
// of the group they belong to.
//
// Where the gateway cannot store what Prometheus stores, it does this
// instead:
//
//   - job and instance are the group key's, not set on series from the
//     resource: service.instance.id is on no series unless --otlp.group-by
//     names it (then it is the key's instance).
//   - A series is one client_model metric, so a later point of the same
//     labels replaces the whole histogram or summary (Prometheus keeps each
//     sample series' last value); a counter or classic bucket carries one
//     exemplar, the one Prometheus appends last; an attribute named le (on
//     a histogram point, explicit or exponential) or quantile (on a summary
//     point), which Prometheus keeps on _sum and _count (and native
//     series), is left out; a histogram point without
//     a sum is served with _sum 0, which the exposition formats cannot
//     leave out.
//   - What the store's series identity refuses for a whole group (a family
//     name of two types, two families exposing one sample name, UTF-8
//     label names written alike under an escaping), and points Prometheus'
//     storage refuses for a whole request (a scale below -4, an exponential
//     histogram whose buckets disagree with its count, a timestamp more
//     than 10 minutes ahead, an exemplar without value, delta points under
//     --otlp.delta=reject), is refused point by point, the first name kept.
//     Explicit histograms are also checked: bucket counts matching the
//     bounds, bounds increasing, counts adding up to the count.
//   - Under legacy names, exemplar attribute names are sanitised as label
//     names (Prometheus keeps them as sent).
package otlp
