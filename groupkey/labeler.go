package groupkey

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/limits"
)

// Labeler gives the series pushed under one key their labels: the grouping
// labels forced to the key's values, instance="" when neither the key nor
// the series has an instance label, sorted by name. Make one per push with
// Key.Labeler.
type Labeler struct {
	key Key
	// grouping holds the key's labels as label pairs, shared by every
	// series of the push.
	grouping []*dto.LabelPair
	// emptyInstance is instance="", nil when the key has an instance label.
	emptyInstance *dto.LabelPair
	utf8Names     bool
	lim           limits.Limits
}

// Labeler returns the Labeler of the series pushed under k, checking body
// label names under the UTF-8 name rules when utf8Names is set and every
// body label against the per-push limits in lim.
func (k Key) Labeler(utf8Names bool, lim limits.Limits) Labeler {
	l := Labeler{key: k, grouping: k.LabelPairs(false), utf8Names: utf8Names, lim: lim}
	if _, hasInstance := k.Get("instance"); !hasInstance {
		l.emptyInstance = &dto.LabelPair{Name: proto.String("instance"), Value: proto.String("")}
	}
	return l
}

// Extra returns how many labels Labels may add to a series' own: the
// grouping labels and instance="".
func (l Labeler) Extra() int { return len(l.grouping) + 1 }

// Labels appends to out (empty, with room for in and Extra more) the labels
// of a series of metric whose body labels are in. Errors name the metric:
// an invalid or duplicate label name, a value that is not UTF-8, a label
// over the limits (a *limits.Error).
func (l Labeler) Labels(out []*dto.LabelPair, metric string, in []*dto.LabelPair) ([]*dto.LabelPair, error) {
	// A series with far more labels than the limit is rejected before the
	// copy and sort below; body labels the grouping key overwrites are too
	// few to matter.
	if l.lim.MaxLabelsPerSeries > 0 && len(in) > l.lim.MaxLabelsPerSeries+len(l.grouping) {
		return nil, l.lim.CheckLabelCount(metric, len(in))
	}
	bodyInstance := false
	for _, lp := range in {
		n := lp.GetName()
		if _, grouped := l.key.Get(n); grouped {
			continue
		}
		if err := l.lim.CheckLabel(metric, n, lp.GetValue()); err != nil {
			return nil, err
		}
		if strings.HasPrefix(n, "__") || !exposition.ValidLabelName(n, l.utf8Names) {
			return nil, fmt.Errorf("metric %q: invalid label name %q", metric, n)
		}
		if !utf8.ValidString(lp.GetValue()) {
			return nil, fmt.Errorf("metric %q: label %q has a value that is not valid UTF-8", metric, n)
		}
		if n == "instance" {
			bodyInstance = true
		}
		out = append(out, lp)
	}
	out = append(out, l.grouping...)
	if l.emptyInstance != nil && !bodyInstance {
		out = append(out, l.emptyInstance)
	}
	// slices.SortFunc, not sort.Slice: the latter's reflect-based swapper
	// allocated on every metric.
	slices.SortFunc(out, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	for i := 1; i < len(out); i++ {
		if out[i].GetName() == out[i-1].GetName() {
			return nil, fmt.Errorf("metric %q: duplicate label name %q", metric, out[i].GetName())
		}
	}
	return out, nil
}

// LabelPairs returns the key's labels as label pairs, plus instance="" when
// withInstance is set and the key has no instance label, sorted by name.
// It allocates three times (pairs, strings, pointers) instead of three
// times per label: label pairs made one by one were 5 of a push's 113
// allocations.
func (k Key) LabelPairs(withInstance bool) []*dto.LabelPair {
	n := len(k.labels)
	_, hasInstance := k.Get("instance")
	addInstance := withInstance && !hasInstance
	if addInstance {
		n++
	}
	pairs := make([]dto.LabelPair, n)
	strs := make([]string, 0, 2*n)
	out := make([]*dto.LabelPair, 0, n)
	add := func(name, value string) {
		strs = append(strs, name, value)
		p := &pairs[len(out)]
		p.Name, p.Value = &strs[len(strs)-2], &strs[len(strs)-1]
		out = append(out, p)
	}
	for _, l := range k.labels {
		if addInstance && l.Name > "instance" {
			add("instance", "")
			addInstance = false
		}
		add(l.Name, l.Value)
	}
	if addInstance {
		add("instance", "")
	}
	return out
}
