package otlp

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/pushgate/pushgate/exposition"
)

// label is one label of a series under construction.
type label struct {
	name, value string
}

func compareLabels(a, b label) int { return strings.Compare(a.name, b.name) }

// labelList is a series' labels under construction with the semantics of
// Prometheus' label builder: setting a name replaces its value, and an
// empty value is the same as no label (dropped when the list is finished).
type labelList []label

// get returns the value of name, "" when absent.
func (l labelList) get(name string) string {
	for i := range l {
		if l[i].name == name {
			return l[i].value
		}
	}
	return ""
}

// set gives name the value v.
func (l *labelList) set(name, v string) {
	for i := range *l {
		if (*l)[i].name == name {
			(*l)[i].value = v
			return
		}
	}
	*l = append(*l, label{name, v})
}

// attrName returns the label name of an attribute (or a promoted resource
// attribute, or "otel_scope_"+attribute) as Prometheus' label namer builds
// it. A legacy name not starting with '_' is its own label name under every
// strategy, which spares the namer's allocation for nearly every attribute.
func (t *Translator) attrName(key string) (string, error) {
	if plainLabelName(key) {
		return key, nil
	}
	name, err := t.labelNamer.Build(key)
	if err != nil {
		return "", err
	}
	if !exposition.ValidLabelName(name, t.settings.UTF8Names) {
		return "", fmt.Errorf("label name %q is not valid", name)
	}
	return name, nil
}

// plainLabelName reports whether name is [a-zA-Z][a-zA-Z0-9_]*, which the
// label namer returns unchanged.
func plainLabelName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c == '_' || c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

// attrLabels appends to dst the labels of a point's attributes as
// Prometheus builds them: attributes sorted by key (ignore, if not empty,
// is left out), each key sanitised by the label namer unless the strategy
// keeps UTF-8 names; attributes whose names collide after sanitising have
// their values joined with ";" in key order (an empty value does not
// start a join). sorted is scratch space.
func (t *Translator) attrLabels(dst labelList, sorted []label, attrs pcommon.Map, ignore func(string) bool) (labelList, []label, error) {
	sorted = sorted[:0]
	for k, v := range attrs.All() {
		if ignore != nil && ignore(k) {
			continue
		}
		sorted = append(sorted, label{k, v.AsString()})
	}
	slices.SortStableFunc(sorted, compareLabels)
	if t.utf8Allowed {
		// Prometheus copies the names as they are: no two can collide.
		for _, l := range sorted {
			if !exposition.ValidLabelName(l.name, true) {
				return dst, sorted, fmt.Errorf("attribute name %q is not a valid label name", l.name)
			}
			dst.set(l.name, l.value)
		}
		return dst, sorted, nil
	}
	for _, l := range sorted {
		name, err := t.attrName(l.name)
		if err != nil {
			return dst, sorted, fmt.Errorf("attribute %q: %w", l.name, err)
		}
		if prev := dst.get(name); prev != "" {
			dst.set(name, prev+";"+l.value)
		} else {
			dst.set(name, l.value)
		}
	}
	return dst, sorted, nil
}

// ignoreNameAttr leaves out the attribute __name__, which Prometheus'
// receiver ignores on data points.
func ignoreNameAttr(k string) bool { return k == "__name__" }

// finish drops from l what the gateway does not store on a series (empty
// values, __name__, the group key's labels and those Prometheus would have
// set from the resource, see resourceState.dropped, and extra, the le or
// quantile label a histogram or summary sets), sorts it by name and checks
// the values.
func (r *resourceState) finish(l labelList, extra string) (labelList, error) {
	out := l[:0]
	for _, lb := range l {
		if lb.value == "" || lb.name == "__name__" || lb.name == extra || r.dropped(lb.name) {
			continue
		}
		if !utf8.ValidString(lb.value) {
			return nil, fmt.Errorf("the value of label %s is not valid UTF-8", exposition.QuoteLabelName(lb.name))
		}
		out = append(out, lb)
	}
	slices.SortFunc(out, compareLabels)
	return out, nil
}
