package otlp

import (
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/otlptranslator"
)

// DefaultTranslationStrategy is Prometheus' default strategy.
const DefaultTranslationStrategy = "UnderscoreEscapingWithSuffixes"

// ParseTranslationStrategy returns the strategy named s, one of Prometheus'
// four (the empty string is the default, UnderscoreEscapingWithSuffixes).
// Whether the strategy is allowed at all depends on UTF8Names: see
// Settings.Validate.
func ParseTranslationStrategy(s string) (otlptranslator.TranslationStrategyOption, error) {
	switch o := otlptranslator.TranslationStrategyOption(s); o {
	case "":
		return otlptranslator.UnderscoreEscapingWithSuffixes, nil
	case otlptranslator.UnderscoreEscapingWithSuffixes, otlptranslator.UnderscoreEscapingWithoutSuffixes,
		otlptranslator.NoUTF8EscapingWithSuffixes, otlptranslator.NoTranslation:
		return o, nil
	}
	return "", fmt.Errorf("unsupported OTLP translation strategy %q (want UnderscoreEscapingWithSuffixes, UnderscoreEscapingWithoutSuffixes, NoUTF8EscapingWithSuffixes or NoTranslation)", s)
}

// ParseDeltaMode returns the DeltaMode named s: "accumulate" (also the
// empty string) or "reject".
func ParseDeltaMode(s string) (DeltaMode, error) {
	switch s {
	case "", "accumulate":
		return Accumulate, nil
	case "reject":
		return Reject, nil
	}
	return 0, fmt.Errorf("unsupported OTLP delta mode %q (want accumulate or reject)", s)
}

// String returns the mode's flag value.
func (d DeltaMode) String() string {
	if d == Reject {
		return "reject"
	}
	return "accumulate"
}

// Validate checks s as Prometheus checks its otlp: block, and trims the
// spaces around attribute names in place as Prometheus does: the strategy
// must be one of the four, and the two that keep UTF-8 names need
// UTF8Names (as Prometheus refuses them under legacy name validation);
// PromoteAllResourceAttributes excludes PromoteResourceAttributes, and
// IgnoreResourceAttributes needs it; no attribute list holds an empty or
// repeated name. GroupBy's names must give distinct label names, none of
// them job (the job comes from service.name).
func (s *Settings) Validate() error {
	strategy, err := ParseTranslationStrategy(s.TranslationStrategy)
	if err != nil {
		return err
	}
	if !strategy.ShouldEscape() && !s.UTF8Names {
		return fmt.Errorf("OTLP translation strategy %q is not allowed when UTF-8 names are disabled (--push.enable-utf8-names)", strategy)
	}
	if s.PromoteAllResourceAttributes {
		if len(s.PromoteResourceAttributes) > 0 {
			return errors.New("promoting all resource attributes and promoting a list of them cannot be configured together")
		}
		if err := trimAttributes(s.IgnoreResourceAttributes, "ignored"); err != nil {
			return err
		}
	} else {
		if len(s.IgnoreResourceAttributes) > 0 {
			return errors.New("ignored resource attributes cannot be configured unless all resource attributes are promoted")
		}
		if err := trimAttributes(s.PromoteResourceAttributes, "promoted"); err != nil {
			return err
		}
	}
	if err := trimAttributes(s.GroupBy, "grouping"); err != nil {
		return err
	}
	namer := labelNamer(strategy)
	seen := make(map[string]string, len(s.GroupBy))
	for _, attr := range s.GroupBy {
		name, err := groupLabelName(&namer, attr)
		if err != nil {
			return fmt.Errorf("grouping resource attribute %q: %w", attr, err)
		}
		if name == "job" {
			return fmt.Errorf("grouping resource attribute %q would be the job label, which comes from service.namespace and service.name", attr)
		}
		if prev, ok := seen[name]; ok {
			return fmt.Errorf("grouping resource attributes %q and %q are both the label %q", prev, attr, name)
		}
		seen[name] = attr
	}
	return nil
}

// trimAttributes trims each name in place and refuses empty and repeated
// names, naming the list by adjective.
func trimAttributes(attrs []string, adjective string) error {
	seen := make(map[string]struct{}, len(attrs))
	var errs error
	for i, a := range attrs {
		a = strings.TrimSpace(a)
		if a == "" {
			errs = errors.Join(errs, fmt.Errorf("empty %s OTel resource attribute", adjective))
			continue
		}
		if _, dup := seen[a]; dup {
			errs = errors.Join(errs, fmt.Errorf("duplicated %s OTel resource attribute %q", adjective, a))
			continue
		}
		seen[a] = struct{}{}
		attrs[i] = a
	}
	return errs
}

// labelNamer is the label namer Prometheus' receiver uses under strategy,
// with the defaults of its otlp: block: label_name_underscore_sanitization
// and label_name_preserve_multiple_underscores are both true ("for
// backwards compatibility"), so "_x" becomes "key_x" and "a..b" "a__b".
func labelNamer(strategy otlptranslator.TranslationStrategyOption) otlptranslator.LabelNamer {
	return otlptranslator.LabelNamer{
		UTF8Allowed:                 !strategy.ShouldEscape(),
		UnderscoreLabelSanitization: true, //nolint:staticcheck // Prometheus' default; the field is the only way to ask for it.
		PreserveMultipleUnderscores: true,
	}
}

// groupLabelName is the label a --otlp.group-by attribute becomes:
// service.instance.id is Prometheus' instance label, any other attribute
// its sanitised name.
func groupLabelName(namer *otlptranslator.LabelNamer, attr string) (string, error) {
	if attr == attrServiceInstanceID {
		return "instance", nil
	}
	return namer.Build(attr)
}
