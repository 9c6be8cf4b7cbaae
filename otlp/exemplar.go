package otlp

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/pushgate/pushgate/exposition"
)

// Exemplar label names for the trace context, as the OpenTelemetry
// specification and Prometheus name them.
const (
	traceIDLabel = "trace_id"
	spanIDLabel  = "span_id"
)

// exemplarRef is a point's exemplar with its value read.
type exemplarRef struct {
	ex    pmetric.Exemplar
	value float64
}

// exemplars reads a point's exemplars in their order, into scratch space
// valid until the next call. An exemplar with neither an integer nor a
// double value is refused with its point, as Prometheus refuses it.
func (p *pointContext) exemplars(es pmetric.ExemplarSlice) ([]exemplarRef, error) {
	out := p.tr.exemplars[:0]
	for i := 0; i < es.Len(); i++ {
		ex := es.At(i)
		var v float64
		switch ex.ValueType() {
		case pmetric.ExemplarValueTypeInt:
			v = float64(ex.IntValue())
		case pmetric.ExemplarValueTypeDouble:
			v = ex.DoubleValue()
		default:
			return nil, fmt.Errorf("an exemplar has no value")
		}
		out = append(out, exemplarRef{ex, v})
	}
	p.tr.exemplars = out
	return out, nil
}

// latest returns the exemplar Prometheus appends last of exs: it sorts a
// sample's exemplars by timestamp, then value. A counter or a classic
// bucket carries one exemplar, so the gateway keeps that one.
func (t *Translator) latest(exs []exemplarRef) exemplarRef {
	best := exs[0]
	for _, e := range exs[1:] {
		if t.compareExemplars(e, best) >= 0 {
			best = e
		}
	}
	return best
}

// compareExemplars orders exemplars as Prometheus sorts them before
// appending: by timestamp, then value, then labels (built only for such
// a tie).
func (t *Translator) compareExemplars(a, b exemplarRef) int {
	if c := compareTimestamps(a.ex.Timestamp(), b.ex.Timestamp()); c != 0 {
		return c
	}
	if c := cmp.Compare(a.value, b.value); c != 0 {
		return c
	}
	return compareLabelLists(t.exemplarLabels(a.ex), t.exemplarLabels(b.ex))
}

// compareLabelLists orders sorted label lists as Prometheus orders label
// sets: label by label, name then value, a prefix first.
func compareLabelLists(a, b labelList) int {
	for i := range min(len(a), len(b)) {
		if c := strings.Compare(a[i].name, b[i].name); c != 0 {
			return c
		}
		if c := strings.Compare(a[i].value, b[i].value); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

// dtoExemplar converts an exemplar as Prometheus does: trace_id and
// span_id as lowercase hex when set, then the filtered attributes unless
// they would take the labels past OpenMetrics' 128 code points (the trace
// context wins over attributes of the same names), sorted by name; its
// timestamp when set. Attribute names are label names: under legacy names
// they are sanitised as series labels are (Prometheus keeps them as they
// are, which the gateway could not serve), and one that cannot be, or that
// repeats another, is left out.
func (p *pointContext) dtoExemplar(e exemplarRef) *dto.Exemplar {
	a := &p.tr.arena
	out := &dto.Exemplar{Label: a.labelPairs(p.tr.t.exemplarLabels(e.ex)), Value: a.float(e.value)}
	if ts := e.ex.Timestamp(); ts != 0 {
		out.Timestamp = timestamppb.New(ts.AsTime())
	}
	return out
}

// exemplarLabels returns an exemplar's labels, sorted (see dtoExemplar).
func (t *Translator) exemplarLabels(ex pmetric.Exemplar) labelList {
	ls := make(labelList, 0, 2+ex.FilteredAttributes().Len())
	runes := 0
	if id := ex.TraceID(); !id.IsEmpty() {
		v := hex.EncodeToString(id[:])
		ls = append(ls, label{traceIDLabel, v})
		runes += len(traceIDLabel) + len(v)
	}
	if id := ex.SpanID(); !id.IsEmpty() {
		v := hex.EncodeToString(id[:])
		ls = append(ls, label{spanIDLabel, v})
		runes += len(spanIDLabel) + len(v)
	}
	fixed := len(ls)
	for k, v := range ex.FilteredAttributes().All() {
		if (k == traceIDLabel || k == spanIDLabel) && ls[:fixed].get(k) != "" {
			continue
		}
		name, err := t.exemplarLabelName(k)
		if err != nil || ls.clashes(name) {
			continue
		}
		val := v.AsString()
		if !utf8.ValidString(val) {
			continue
		}
		runes += utf8.RuneCountInString(name) + utf8.RuneCountInString(val)
		ls = append(ls, label{name, val})
	}
	if runes > exposition.ExemplarMaxRunes {
		ls = ls[:fixed]
	}
	slices.SortFunc(ls, compareLabels)
	return ls
}

// clashes reports whether name is one of ls' names under some escaping.
func (l labelList) clashes(name string) bool {
	for _, x := range l {
		if sameUnderEscaping(x.name, name) {
			return true
		}
	}
	return false
}

// exemplarLabelName is the label name of an exemplar attribute.
func (t *Translator) exemplarLabelName(k string) (string, error) {
	if t.settings.UTF8Names {
		if !exposition.ValidLabelName(k, true) {
			return "", fmt.Errorf("invalid exemplar label name %q", k)
		}
		return k, nil
	}
	return t.attrName(k)
}

// sortedByTime returns exs' exemplars in the order Prometheus appends
// them (see compareExemplars).
func (p *pointContext) sortedByTime(exs []exemplarRef) []*dto.Exemplar {
	slices.SortStableFunc(exs, p.tr.t.compareExemplars)
	out := make([]*dto.Exemplar, len(exs))
	for i, e := range exs {
		out[i] = p.dtoExemplar(e)
	}
	return out
}

func compareTimestamps(a, b pcommon.Timestamp) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
