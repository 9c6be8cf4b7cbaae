package oracle

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"
)

// expectedSamples returns the samples Prometheus ingests when families are
// served in view: names escaped as the view's escaping requires, then read
// by Prometheus' own protobuf parser (native histograms stay native only in
// protobuf; in the text formats they are their classic +Inf bucket, _sum and
// _count). With omNames, samples are renamed as the OpenMetrics
// specification names them (a counter's sample X_total, a gauge
// histogram's _gcount and _gsum); without, OpenMetrics keeps the sample
// names of the text format, as expfmt writes it (a counter without the
// _total suffix becomes type unknown).
func expectedSamples(fams []*dto.MetricFamily, v view, omNames bool) ([]sample, error) {
	var buf bytes.Buffer
	for _, mf := range fams {
		if _, err := protodelim.MarshalTo(&buf, escapeFamily(mf, v.scheme)); err != nil {
			return nil, fmt.Errorf("encode expected family %s: %w", mf.GetName(), err)
		}
	}
	samples, _, err := parseSamples(buf.Bytes(), protoContentType, v.enc == "protobuf")
	if err != nil {
		return nil, fmt.Errorf("parse expected families: %w", err)
	}
	if v.enc == "openmetrics" && omNames {
		for i, s := range samples {
			samples[i] = openMetricsSample(s)
		}
	}
	return samples, nil
}

// escapeFamily returns mf with its metric and label names escaped.
func escapeFamily(mf *dto.MetricFamily, scheme model.EscapingScheme) *dto.MetricFamily {
	if scheme == model.NoEscaping {
		return mf
	}
	out := proto.Clone(mf).(*dto.MetricFamily)
	out.Name = proto.String(escapeMetricName(mf.GetName(), scheme))
	for _, m := range out.Metric {
		for _, lp := range m.Label {
			lp.Name = proto.String(escapeLabelName(lp.GetName(), scheme))
		}
	}
	return out
}

// openMetricsSample renames a sample as OpenMetrics writes it.
func openMetricsSample(s sample) sample {
	name := s.ls.Get(model.MetricNameLabel)
	newName := name
	switch s.typ {
	case model.MetricTypeCounter:
		if !strings.HasSuffix(name, "_total") {
			newName = name + "_total"
		}
	case model.MetricTypeGaugeHistogram:
		if s.h == nil && s.fh == nil {
			if base, ok := strings.CutSuffix(name, "_count"); ok && base == s.family {
				newName = base + "_gcount"
			}
			if base, ok := strings.CutSuffix(name, "_sum"); ok && base == s.family {
				newName = base + "_gsum"
			}
		}
	}
	if newName == name {
		return s
	}
	b := labels.NewBuilder(s.ls)
	b.Set(model.MetricNameLabel, newName)
	s.ls = b.Labels()
	s.id = identity(s.ls)
	return s
}

// diffSamples compares two multisets of samples by identity and value and
// describes each difference (at most limit of them).
func diffSamples(want, got []sample, limit int) []string {
	index := func(ss []sample) map[string][]string {
		m := map[string][]string{}
		for _, s := range ss {
			m[s.id] = append(m[s.id], s.valueString())
		}
		for _, vs := range m {
			sort.Strings(vs)
		}
		return m
	}
	w, g := index(want), index(got)
	ids := map[string]bool{}
	for id := range w {
		ids[id] = true
	}
	for id := range g {
		ids[id] = true
	}
	sorted := make([]string, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Strings(sorted)
	var out []string
	for _, id := range sorted {
		wv, gv := w[id], g[id]
		if strings.Join(wv, "\x00") == strings.Join(gv, "\x00") {
			continue
		}
		switch {
		case len(gv) == 0:
			out = append(out, fmt.Sprintf("missing %s %s", id, strings.Join(wv, ", ")))
		case len(wv) == 0:
			out = append(out, fmt.Sprintf("unexpected %s %s", id, strings.Join(gv, ", ")))
		default:
			out = append(out, fmt.Sprintf("%s is %s, want %s", id, strings.Join(gv, ", "), strings.Join(wv, ", ")))
		}
	}
	if len(out) > limit {
		out = append(out[:limit], fmt.Sprintf("… %d more", len(out)-limit))
	}
	return out
}

// diffKind classifies a list of differences for the violation class.
func diffKind(diffs []string) string {
	missing, unexpected, value := false, false, false
	for _, d := range diffs {
		switch {
		case strings.HasPrefix(d, "missing "):
			missing = true
		case strings.HasPrefix(d, "unexpected "):
			unexpected = true
		case strings.HasPrefix(d, "… "):
		default:
			value = true
		}
	}
	var parts []string
	if missing {
		parts = append(parts, "missing")
	}
	if unexpected {
		parts = append(parts, "unexpected")
	}
	if value {
		parts = append(parts, "value")
	}
	return strings.Join(parts, "+")
}
