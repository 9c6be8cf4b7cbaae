// Package admission decides whether a push is accepted. Everything that can
// refuse one runs here, as one ordered pipeline, and every refusal is one
// type, *Error, which the HTTP layer turns into a status code and a
// one-line reason in one place.
//
// The stages, in the order a push meets them:
//
//  1. Grouping labels (GroupingLabels): a job, label names valid under the
//     name rules and not reserved, values UTF-8, names that no escaping
//     writes alike, lengths within the limits. The HTTP layer runs the
//     length part alone (GroupingLimits) before it reads the body.
//  2. Push size (Check): the series of the push within --push.max-series.
//  3. Families (Check): names not reserved for the gateway, valid and
//     within the limits; per series: no timestamp, exactly the value its
//     type has, exemplars any scrape can carry, no sample series twice,
//     labels valid and within the limits once the grouping labels are
//     forced on them, no reserved labels, no series twice.
//  4. Store capacity (Capacity), under the store's lock: the push does not
//     take the store over --store.max-groups or --store.max-series.
//  5. Consistency (Refusal wraps the store index's finding): no
//     series of the push is another group's, no family name another
//     type's.
//
// Stages 1 to 3 need nothing but the push; the store runs 4 and 5 against
// its head (committed and pending changes).
package admission
