package admission

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/limits"
)

// labeler gives the series pushed under one key their labels: the grouping
// labels forced to the key's values, instance="" when neither the key nor
// the series has an instance label, sorted by name. Make one per push with
// newLabeler.
type labeler struct {
	key groupkey.Key
	// grouping holds the key's labels as label pairs, shared by every
	// series of the push.
	grouping []*dto.LabelPair
	// emptyInstance is instance="", nil when the key has an instance label.
	emptyInstance *dto.LabelPair
	utf8Names     bool
	lim           limits.Limits
}

// newLabeler returns the labeler of the series pushed under k, checking
// body label names under the UTF-8 name rules when utf8Names is set and
// every body label against the per-push limits in lim.
func newLabeler(k groupkey.Key, utf8Names bool, lim limits.Limits) labeler {
	l := labeler{key: k, grouping: k.LabelPairs(false), utf8Names: utf8Names, lim: lim}
	if _, hasInstance := k.Get("instance"); !hasInstance {
		l.emptyInstance = &dto.LabelPair{Name: proto.String("instance"), Value: proto.String("")}
	}
	return l
}

// extra returns how many labels labels may add to a series' own: the
// grouping labels and instance="".
func (l labeler) extra() int { return len(l.grouping) + 1 }

// labels appends to out (empty, with room for in and extra more) the labels
// of a series of metric whose body labels are in. Errors name the metric:
// an invalid or duplicate label name, a value that is not UTF-8, a label
// over the limits (an OverLimit *Error).
func (l labeler) labels(out []*dto.LabelPair, metric string, in []*dto.LabelPair) ([]*dto.LabelPair, error) {
	// A series with far more labels than the limit is rejected before the
	// copy and sort below; body labels the grouping key overwrites are too
	// few to matter.
	if l.lim.MaxLabelsPerSeries > 0 && len(in) > l.lim.MaxLabelsPerSeries+len(l.grouping) {
		return nil, checkLabelCount(l.lim, metric, len(in))
	}
	bodyInstance := false
	for _, lp := range in {
		n := lp.GetName()
		if _, grouped := l.key.Get(n); grouped {
			continue
		}
		if err := checkLabel(l.lim, metric, n, lp.GetValue()); err != nil {
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
