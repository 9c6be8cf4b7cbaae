package otlp

import (
	"fmt"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/seriesid"
)

// The store keeps one series identity across every escaping a scrape may
// ask for (DESIGN §5): a family name has one type in the whole store, two
// family names must not expose one sample name, and, under UTF-8 names,
// two label names must not be written alike ("http.method" and
// "http_method" under escaping=underscores). Prometheus' receiver has no
// such rule, so one request can carry what the store refuses; the store
// would refuse the whole group. The request's names are checked here
// instead, first come first kept, so that only the points that clash are
// refused.

// claims is the request-wide register of names.
type claims struct {
	// types is each family name's type, and owners the family each
	// claimed sample name belongs to.
	types  map[string]dto.MetricType
	owners map[string]string
	// labels maps each escaped label name to the name that claimed it,
	// and labelOK remembers each label name's verdict.
	labels  map[string]string
	labelOK map[string]error
}

// claimFamily registers a family name of type typ, which claims the
// sample names cs, for the request, or says why it clashes with one
// registered before.
func (tr *translation) claimFamily(name string, typ dto.MetricType, cs []string) error {
	c := &tr.claims
	if t, ok := c.types[name]; ok {
		if t != typ {
			return fmt.Errorf("its family %q is already a %s in this request", name, strings.ToLower(t.String()))
		}
		return nil
	}
	for _, claim := range cs {
		if other, ok := c.owners[claim]; ok && other != name {
			return fmt.Errorf("its family %q clashes with the family %q of this request: both would expose %s", name, other, seriesid.DescribeClaim(claim))
		}
	}
	if c.types == nil {
		c.types = make(map[string]dto.MetricType, 16)
		c.owners = make(map[string]string, 4*16)
	}
	c.types[name] = typ
	for _, claim := range cs {
		c.owners[claim] = name
	}
	return nil
}

// checkLabelNames refuses, under UTF-8 names, a series whose label name is
// written like another label name of the request under some escaping, or
// under escaping=underscores starts with "__" (a name Prometheus drops).
// Legacy label names never clash with one another, and under legacy name
// rules no other kind reaches the store.
func (tr *translation) checkLabelNames(ls labelList) error {
	if !tr.t.settings.UTF8Names {
		return nil
	}
	for _, l := range ls {
		if err := tr.claimLabel(l.name); err != nil {
			return err
		}
	}
	return nil
}

// claimLabel registers a label name for the request, once per name.
func (tr *translation) claimLabel(name string) error {
	c := &tr.claims
	if err, seen := c.labelOK[name]; seen {
		return err
	}
	if c.labelOK == nil {
		c.labelOK = make(map[string]error, 16)
		c.labels = make(map[string]string, 32)
	}
	err := seriesid.CheckLabelNameEscapes("", name)
	if err == nil {
		for _, s := range seriesid.LabelSchemes() {
			k := seriesid.LabelKey(name, s)
			if other, ok := c.labels[k]; ok && other != name {
				err = fmt.Errorf("label name %q is written like label name %q under escaping=%s", name, other, s)
				break
			}
		}
	}
	if err == nil {
		for _, s := range seriesid.LabelSchemes() {
			c.labels[seriesid.LabelKey(name, s)] = name
		}
	}
	c.labelOK[name] = err
	return err
}

// sameUnderEscaping reports whether two label names are one under some
// escaping a scrape may ask for (an exemplar may not hold both).
func sameUnderEscaping(a, b string) bool {
	if a == b {
		return true
	}
	for _, s := range exposition.EscapingSchemes[1:] {
		if exposition.EscapeLabelName(a, s) == exposition.EscapeLabelName(b, s) {
			return true
		}
	}
	return false
}
