package otlp

import (
	"time"

	dto "github.com/prometheus/client_model/go"
)

// DeltaMode says what the gateway does with delta-temporality points.
type DeltaMode int

const (
	// Accumulate adds each delta point to the stored cumulative value of
	// its series, once per window (--otlp.delta=accumulate, the default).
	Accumulate DeltaMode = iota
	// Reject refuses delta points, as Prometheus' receiver does without
	// its delta-to-cumulative conversion (--otlp.delta=reject).
	Reject
)

// Settings are the translation settings, named after Prometheus' otlp:
// configuration block and with its defaults, plus the gateway's own
// grouping and delta settings.
type Settings struct {
	// TranslationStrategy is one of Prometheus' four strategies
	// ("UnderscoreEscapingWithSuffixes", the default,
	// "UnderscoreEscapingWithoutSuffixes", "NoUTF8EscapingWithSuffixes",
	// "NoTranslation"); the last two need UTF8Names.
	TranslationStrategy string
	// PromoteResourceAttributes are the resource attributes copied onto
	// every series of the resource; PromoteAllResourceAttributes copies
	// all of them but IgnoreResourceAttributes.
	PromoteResourceAttributes    []string
	PromoteAllResourceAttributes bool
	IgnoreResourceAttributes     []string
	// KeepIdentifyingResourceAttributes keeps service.name,
	// service.namespace and service.instance.id in target_info.
	KeepIdentifyingResourceAttributes bool
	// PromoteScopeMetadata adds otel_scope_name, otel_scope_version,
	// otel_scope_schema_url and otel_scope_<attribute> labels.
	PromoteScopeMetadata bool
	// GroupBy names the resource attributes that join job in a group's
	// key when the URL gives none (their label names sanitised as
	// Prometheus sanitises label names; service.instance.id becomes
	// instance).
	GroupBy []string
	// Delta is what happens to delta points.
	Delta DeltaMode
	// UTF8Names allows names that are not valid legacy Prometheus names
	// (--push.enable-utf8-names).
	UTF8Names bool
}

// Group is what one ResourceMetrics of a request becomes.
type Group struct {
	// Labels are the group's grouping labels (its key): the URL's when it
	// carries them, else derived from the resource. Job is always set,
	// except in the Group of a resource from which no key can be derived
	// (no service.name and no URL labels): its Labels are nil, and it
	// carries only its refused points (Rejected, Reason).
	Labels map[string]string
	// Families are the translated families of cumulative points, gauges
	// and summaries, and target_info, each family complete (a request
	// replaces, in its group, the families it carries). Their series do
	// not carry the grouping labels: the store adds them. A family whose
	// every point was NoRecordedValue is present with no metrics, so that
	// the request removes it.
	Families []*dto.MetricFamily
	// Times are the newest point timestamps of Families, Times[i] that of
	// Families[i] (target_info's: the newest of the group); a missing or
	// zero entry is no time. The store keeps them in the families' states
	// so that an older request does not roll a family back (see
	// AppendFamilyState).
	Times []time.Time
	// Deltas are the delta points (monotonic sums and histograms), by
	// family, for Accumulate.
	Deltas []DeltaFamily
	// Rejected counts the points refused while the rest of the group was
	// translated (a refused target_info series counts as one), and Reason
	// names the first refusal.
	Rejected int
	Reason   string
}

// DeltaFamily is one family's delta points, translated like cumulative
// points but holding each point's own increase: a monotonic sum is a
// counter, a non-monotonic sum a gauge (whose deltas are summed too, as
// Prometheus' delta-to-cumulative conversion sums them), an explicit
// histogram a classic histogram (its buckets exactly its bounds, no +Inf
// bucket), an exponential one a native histogram. No created timestamp is
// set: the window says when each point starts. Several points of one
// series may follow each other, in the request's order.
type DeltaFamily struct {
	// Family is the family's header and its points, one dto.Metric per
	// point: a counter's increase, or a histogram's bucket increases.
	Family *dto.MetricFamily
	// Windows are the points' windows (start, end], in the order of
	// Family.Metric.
	Windows []Window
}

// Window is the time a delta point covers, (Start, End], and the source
// that sent it.
type Window struct {
	Start, End time.Time
	// Source names the process that sent the point: a 64-bit hash of its
	// resource's service.instance.id (SDKs draw a random one per process),
	// 0 for a resource without one. Overlapping windows are retries only
	// when they come from one source; two processes of one job running at
	// once send overlapping windows whose points are all summed.
	Source uint64
}
