package otlp

import (
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// The resource attributes Prometheus derives job and instance from (the
// OpenTelemetry semantic conventions' names).
const (
	attrServiceName       = "service.name"
	attrServiceNamespace  = "service.namespace"
	attrServiceInstanceID = "service.instance.id"
)

// targetInfoName and targetInfoHelp are target_info's name and HELP text as
// Prometheus writes them.
const (
	targetInfoName = "target_info"
	targetInfoHelp = "Target metadata"
)

// resourceState is what every series of one ResourceMetrics shares: its
// group's key, the labels Prometheus would set from the resource, and the
// promoted resource attributes.
type resourceState struct {
	// key is the group key's labels, sorted by name, and keyID its
	// canonical form (groups of equal keys are merged).
	key   []label
	keyID string
	// job is the job Prometheus derives ("" when it derives none), and
	// hasInstance whether it sets instance from service.instance.id.
	job         string
	hasInstance bool
	// promoted are the promoted resource attributes, label names built.
	promoted labelList
}

// dropped reports whether a series label named name is left out: the
// group's labels come from its key (the store adds them), and job and
// instance as Prometheus would set them from the resource are replaced by
// the key's (the instance is a per-process UUID that the key leaves out by
// default, see DESIGN §7).
func (r *resourceState) dropped(name string) bool {
	switch {
	case name == "job" && r.job != "":
		return true
	case name == "instance" && r.hasInstance:
		return true
	}
	for _, k := range r.key {
		if k.name == name {
			return true
		}
	}
	return false
}

// newResourceState derives a resource's group key and shared labels. The
// key is urlLabels when given, else job (service.namespace + "/" +
// service.name, or service.name, as Prometheus derives its job label) plus
// the --otlp.group-by attributes the resource has. A resource with no
// derivable job and no URL labels has no group: the returned reason says
// why.
func (t *Translator) newResourceState(res pcommon.Resource, urlLabels []label) (*resourceState, string, error) {
	attrs := res.Attributes()
	r := &resourceState{}
	if v, ok := attrs.Get(attrServiceName); ok {
		r.job = v.AsString()
		if ns, ok := attrs.Get(attrServiceNamespace); ok {
			r.job = ns.AsString() + "/" + r.job
		}
	}
	if v, ok := attrs.Get(attrServiceInstanceID); ok && v.AsString() != "" {
		r.hasInstance = true
	}
	if len(urlLabels) > 0 {
		r.key = urlLabels
	} else {
		if r.job == "" {
			return nil, "resource has no service.name, so no job can be derived for its group (push to /otlp/job/<job>/v1/metrics to name one)", nil
		}
		r.key = append(r.key, label{"job", r.job})
		for _, attr := range t.settings.GroupBy {
			v, ok := attrs.Get(attr)
			if !ok || v.AsString() == "" {
				continue
			}
			name, err := groupLabelName(&t.labelNamer, attr)
			if err != nil {
				return nil, "", fmt.Errorf("grouping attribute %q: %w", attr, err)
			}
			r.key = append(r.key, label{name, v.AsString()})
		}
		slices.SortFunc(r.key, compareLabels)
	}
	r.keyID = keyID(r.key)
	if t.promoteAll || len(t.promote) > 0 {
		for k, v := range attrs.All() {
			_, listed := t.promote[k]
			if listed == t.promoteAll { // promoted unless listed (all), or listed (some)
				continue
			}
			name, err := t.attrName(k)
			if err != nil {
				return nil, fmt.Sprintf("promoted resource attribute %q: %v", k, err), nil
			}
			r.promoted.set(name, v.AsString())
		}
	}
	return r, "", nil
}

// keyID is the canonical form of sorted key labels.
func keyID(key []label) string {
	var b strings.Builder
	for _, l := range key {
		b.WriteString(l.name)
		b.WriteByte(0xff)
		b.WriteString(l.value)
		b.WriteByte(0xff)
	}
	return b.String()
}

// sortedURLLabels returns the URL's grouping labels sorted by name, or an
// error when they have no job.
func sortedURLLabels(urlLabels map[string]string) ([]label, error) {
	if len(urlLabels) == 0 {
		return nil, nil
	}
	if urlLabels["job"] == "" {
		return nil, fmt.Errorf("the grouping labels of the URL have no job")
	}
	out := make([]label, 0, len(urlLabels))
	for k, v := range urlLabels {
		out = append(out, label{k, v})
	}
	slices.SortFunc(out, compareLabels)
	return out, nil
}

// targetInfo returns the target_info series of a resource as Prometheus
// writes it, or nil when Prometheus writes none: its labels are the
// resource attributes (names sanitised and collisions joined, as for a
// data point), without service.name, service.namespace and
// service.instance.id unless KeepIdentifyingResourceAttributes (promoted
// attributes are not left out), and without scope labels; it is written
// only when some attribute besides the identifying ones is there, and when
// the series has job or instance (Prometheus' "identifying label"). The
// labels returned are scratch space, valid until the next series is built;
// an error says why the series cannot be written (the caller names
// target_info).
func (t *Translator) targetInfo(tr *translation, res pcommon.Resource, r *resourceState) (labelList, bool, error) {
	attrs := res.Attributes()
	n := attrs.Len()
	for _, a := range [...]string{attrServiceNamespace, attrServiceName, attrServiceInstanceID} {
		if _, ok := attrs.Get(a); ok {
			n--
		}
	}
	if n == 0 {
		return nil, false, nil
	}
	ignore := isIdentifying
	if t.settings.KeepIdentifyingResourceAttributes {
		ignore = nil
	}
	var err error
	ls := tr.labels[:0]
	ls, tr.sorted, err = t.attrLabels(ls, tr.sorted, attrs, ignore)
	if err != nil {
		tr.labels = ls[:0]
		return nil, false, err
	}
	if r.job == "" && !r.hasInstance && ls.get("job") == "" && ls.get("instance") == "" {
		tr.labels = ls[:0]
		return nil, false, nil
	}
	full := ls
	ls, err = r.finish(ls, "")
	tr.labels = full[:0]
	if err != nil {
		return nil, false, err
	}
	return ls, true, nil
}

// isIdentifying reports the resource attributes Prometheus leaves out of
// target_info (they are job and instance).
func isIdentifying(k string) bool {
	return k == attrServiceName || k == attrServiceNamespace || k == attrServiceInstanceID
}
