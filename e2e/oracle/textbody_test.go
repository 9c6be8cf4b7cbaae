package oracle

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// textParts writes families in the text format, spelling numbers and names
// in the ways a client may (0.5 or 0.50, quoted UTF-8 names). Element i
// holds family i: its HELP and TYPE lines, then one element per metric.
func (g *generator) textParts(fams []*dto.MetricFamily) [][]string {
	var out [][]string
	for _, mf := range fams {
		var head strings.Builder
		name := mf.GetName()
		if mf.Help != nil {
			fmt.Fprintf(&head, "# HELP %s %s\n", textName(name), escapeHelp(mf.GetHelp()))
		}
		typ := strings.ToLower(mf.GetType().String())
		if mf.GetType() != dto.MetricType_UNTYPED || g.chance(0.5) {
			fmt.Fprintf(&head, "# TYPE %s %s\n", textName(name), typ)
		}
		parts := []string{head.String()}
		for _, m := range mf.Metric {
			var b strings.Builder
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				writeSample(&b, name, m.Label, "", "", m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				writeSample(&b, name, m.Label, "", "", m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				writeSample(&b, name, m.Label, "", "", m.GetUntyped().GetValue())
			case dto.MetricType_SUMMARY:
				for _, q := range m.GetSummary().GetQuantile() {
					writeSample(&b, name, m.Label, "quantile", g.spell(q.GetQuantile()), q.GetValue())
				}
				writeSample(&b, name+"_sum", m.Label, "", "", m.GetSummary().GetSampleSum())
				writeSample(&b, name+"_count", m.Label, "", "", float64(m.GetSummary().GetSampleCount()))
			case dto.MetricType_HISTOGRAM:
				for _, bk := range m.GetHistogram().GetBucket() {
					writeSample(&b, name+"_bucket", m.Label, "le", g.spell(bk.GetUpperBound()), float64(bk.GetCumulativeCount()))
				}
				writeSample(&b, name+"_sum", m.Label, "", "", m.GetHistogram().GetSampleSum())
				writeSample(&b, name+"_count", m.Label, "", "", float64(m.GetHistogram().GetSampleCount()))
			}
			parts = append(parts, b.String())
		}
		out = append(out, parts)
	}
	return out
}

// spell writes a bucket bound or quantile rank in one of its spellings.
func (g *generator) spell(v float64) string {
	s := formatFloat(v)
	if math.IsInf(v, 1) || math.IsNaN(v) || !g.chance(0.4) {
		return s
	}
	if !strings.ContainsAny(s, ".e") {
		return s + ".0"
	}
	if strings.Contains(s, ".") && !strings.Contains(s, "e") {
		return s + "0"
	}
	return s
}

// formatFloat writes v as the text format does.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// textName writes a metric name in a HELP or TYPE line.
func textName(name string) string {
	if legacyMetricName(name) {
		return name
	}
	return `"` + escapeLabelValue(name) + `"`
}

// writeSample writes one sample line; extraName, extraValue is le or
// quantile when set.
func writeSample(b *strings.Builder, name string, lps []*dto.LabelPair, extraName, extraValue string, v float64) {
	var parts []string
	quoted := !legacyMetricName(name)
	if quoted {
		parts = append(parts, `"`+escapeLabelValue(name)+`"`)
	}
	for _, lp := range lps {
		parts = append(parts, labelText(lp.GetName())+`="`+escapeLabelValue(lp.GetValue())+`"`)
	}
	if extraName != "" {
		parts = append(parts, extraName+`="`+extraValue+`"`)
	}
	if !quoted {
		b.WriteString(name)
	}
	if len(parts) > 0 {
		b.WriteString("{" + strings.Join(parts, ",") + "}")
	}
	b.WriteString(" " + formatFloat(v) + "\n")
}

// labelText writes a label name, quoted when it is not a legacy name.
func labelText(name string) string {
	if legacyLabelName(name) {
		return name
	}
	return `"` + escapeLabelValue(name) + `"`
}

// escapeLabelValue escapes \, " and line feeds.
func escapeLabelValue(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// escapeHelp escapes \ and line feeds.
func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}
