package admission

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/limits"
	"github.com/pushgate/pushgate/seriesid"
)

// GroupingLabels checks a group's key (stage 1): a job, label names valid
// under the name rules (utf8Names) and not reserved ("__" prefix), values
// valid UTF-8, under the UTF-8 rules no name the underscores escaping
// writes as a reserved one, and names and values within the limits. A key parsed from a push path
// passed the syntax part already (groupkey.ParsePath); one built from an
// OTLP resource has not.
func GroupingLabels(key groupkey.Key, utf8Names bool, lim limits.Limits) error {
	if err := GroupingLimits(key, lim); err != nil {
		return err
	}
	if key.Job() == "" {
		return Refusal(errors.New("job name is required"))
	}
	for _, l := range key.Labels() {
		if !exposition.ValidLabelName(l.Name, utf8Names) || strings.HasPrefix(l.Name, "__") {
			return Refusal(fmt.Errorf("improper label name %q in the group key", l.Name))
		}
		if !utf8.ValidString(l.Value) {
			return Refusal(fmt.Errorf("value %q of label %q is not valid UTF-8", l.Value, l.Name))
		}
	}
	if utf8Names {
		if err := groupingEscapes(key); err != nil {
			return Refusal(err)
		}
	}
	return nil
}

// groupingEscapes refuses, under the UTF-8 name rules, a key label name
// that the underscores escaping writes as a reserved "__" name
// (seriesid.CheckLabelNameEscapes).
func groupingEscapes(key groupkey.Key) error {
	for _, l := range key.Labels() {
		if err := seriesid.CheckLabelNameEscapes("", l.Name); err != nil {
			return err
		}
	}
	return nil
}

// GroupingLimits checks the lengths of a key's label names and values
// against the limits: the part of stage 1 the HTTP layer runs on a push's
// path before it reads the body. A refusal is an OverLimit *Error.
func GroupingLimits(key groupkey.Key, lim limits.Limits) error {
	for _, l := range key.Labels() {
		if err := checkLabel(lim, "", l.Name, l.Value); err != nil {
			return err
		}
	}
	return nil
}
