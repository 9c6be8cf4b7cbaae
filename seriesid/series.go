// Package seriesid is the one place that says what a series is (DESIGN
// §5): the rules Prometheus applies when it ingests a scrape, which every
// check of the store uses. Its functions are pure; the store's index keeps
// what they compute for the families it holds.
//
//   - A series is a metric name and its labels, an empty label value being
//     the same as an absent label (Family).
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
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/exposition"
)

// HashLabel adds one label of a series to h, nothing when its value is
// empty, framed as Family frames it: written after the series' name, the
// labels give h what Family.Series gives.
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
