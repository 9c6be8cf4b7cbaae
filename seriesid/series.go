// Package seriesid is the one place that says what a series is (DESIGN
// §5): the rules Prometheus applies when it ingests a scrape, which every
// check of the store uses. Its functions are pure; the store's index keeps
// what they compute for the families it holds.
//
//   - A series is a metric name and its labels, an empty label value being
//     the same as an absent label (Hash).
//   - A classic histogram or summary is its sample series: one bucket per
//     upper bound and one quantile per rank, compared as numbers
//     (admission refuses a push that repeats one), besides _sum and _count.
//   - A family exposes names beyond its own: the sample names of its type and
//     its OpenMetrics family name (Claims). Two families of different names
//     must not expose one name, under any escaping a scrape can ask for.
//   - Label names must stay distinct under every escaping (LabelKey).
package seriesid

import (
	"hash/maphash"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/exposition"
)

// Hash hashes a metric name and its sorted labels, leaving out labels
// with an empty value: m{a=""} and m are one series to Prometheus. h
// carries the caller's seed (maphash.Hash.SetSeed): hashes compare only
// under one seed.
func Hash(h *maphash.Hash, name string, labels []*dto.LabelPair) uint64 {
	h.Reset()
	h.WriteString(name)
	for _, lp := range labels {
		HashLabel(h, lp.GetName(), lp.GetValue())
	}
	return h.Sum64()
}

// HashLabel adds one label of a series to h, nothing when its value is
// empty. Hash and the store's restore path both use it, so a series hashes
// alike however it was read.
func HashLabel[S string | []byte](h *maphash.Hash, name, value S) {
	if len(value) == 0 {
		return
	}
	h.WriteByte(0xff)
	h.Write([]byte(name))
	h.WriteByte(0xff)
	h.Write([]byte(value))
}

// String renders a series for error messages: name{a="b",c="d"}, with
// names that are not legacy names quoted, as Prometheus 3 writes them.
func String(name string, labels []*dto.LabelPair) string {
	var b strings.Builder
	b.WriteString(exposition.QuoteMetricName(name))
	b.WriteByte('{')
	for i, lp := range labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(exposition.QuoteLabelName(lp.GetName()))
		b.WriteByte('=')
		b.WriteString(strconv.Quote(lp.GetValue()))
	}
	b.WriteByte('}')
	return b.String()
}

// FamilyLabelNames returns the distinct label names of mf's metrics,
// sorted.
func FamilyLabelNames(mf *dto.MetricFamily) []string {
	var names []string
	for _, m := range mf.GetMetric() {
		for _, lp := range m.GetLabel() {
			if !slices.Contains(names, lp.GetName()) {
				names = append(names, lp.GetName())
			}
		}
	}
	slices.Sort(names)
	return names
}
