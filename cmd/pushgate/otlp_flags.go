package main

import (
	"strconv"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/pushgate/pushgate/otlp"
)

// otlpFlags are the --otlp.* flags: Prometheus' otlp: settings under the
// same names, and the gateway's grouping and delta settings.
type otlpFlags struct {
	translationStrategy       string
	promoteResourceAttributes []string
	promoteAll                bool
	ignoreResourceAttributes  []string
	keepIdentifying           bool
	promoteScopeMetadata      bool
	groupBy                   []string
	delta                     string
}

// addOTLPFlags declares the --otlp.* flags. The attribute lists take the
// flag repeated or a comma-separated list (or both): a list reads better
// in a unit file, and a repeated flag in a container's args.
func addOTLPFlags(app *kingpin.Application, f *otlpFlags) {
	app.Flag("otlp.translation-strategy", "How OTLP metric and label names become Prometheus names, as Prometheus' otlp.translation_strategy: UnderscoreEscapingWithSuffixes, UnderscoreEscapingWithoutSuffixes, NoUTF8EscapingWithSuffixes or NoTranslation (the last two need --push.enable-utf8-names).").
		Default(otlp.DefaultTranslationStrategy).EnumVar(&f.translationStrategy, "UnderscoreEscapingWithSuffixes", "UnderscoreEscapingWithoutSuffixes", "NoUTF8EscapingWithSuffixes", "NoTranslation")
	app.Flag("otlp.promote-resource-attributes", "OTel resource attributes copied onto every series of their resource, as Prometheus' otlp.promote_resource_attributes. Repeatable, or a comma-separated list.").
		StringsVar(&f.promoteResourceAttributes)
	app.Flag("otlp.promote-all-resource-attributes", "Copy every OTel resource attribute onto the resource's series but those of --otlp.ignore-resource-attributes, as Prometheus' otlp.promote_all_resource_attributes.").
		Default("false").BoolVar(&f.promoteAll)
	app.Flag("otlp.ignore-resource-attributes", "OTel resource attributes not copied with --otlp.promote-all-resource-attributes. Repeatable, or a comma-separated list.").
		StringsVar(&f.ignoreResourceAttributes)
	app.Flag("otlp.keep-identifying-resource-attributes", "Keep service.name, service.namespace and service.instance.id in target_info, as Prometheus' otlp.keep_identifying_resource_attributes.").
		Default("false").BoolVar(&f.keepIdentifying)
	app.Flag("otlp.promote-scope-metadata", "Add otel_scope_name, otel_scope_version, otel_scope_schema_url and otel_scope_<attribute> labels, as Prometheus' otlp.promote_scope_metadata.").
		Default("false").BoolVar(&f.promoteScopeMetadata)
	app.Flag("otlp.group-by", "OTel resource attributes that join job in the key of the group a resource is stored in (service.instance.id becomes instance). Default none: SDKs give each process a random service.instance.id, and a gateway that never expires anything must not gain a group per run. Repeatable, or a comma-separated list.").
		StringsVar(&f.groupBy)
	app.Flag("otlp.delta", "What happens to delta-temporality points: accumulate sums each series' points into a counter or histogram kept in its group, each window once; reject refuses them, as Prometheus does.").
		Default("accumulate").EnumVar(&f.delta, "accumulate", "reject")
}

// settings returns the flags as otlp.Settings, validated as the
// translator validates them (names trimmed) (utf8Names is --push.enable-utf8-names).
func (f *otlpFlags) settings(utf8Names bool) (otlp.Settings, error) {
	delta, err := otlp.ParseDeltaMode(f.delta)
	if err != nil {
		return otlp.Settings{}, err
	}
	s := otlp.Settings{
		TranslationStrategy:               f.translationStrategy,
		PromoteResourceAttributes:         splitList(f.promoteResourceAttributes),
		PromoteAllResourceAttributes:      f.promoteAll,
		IgnoreResourceAttributes:          splitList(f.ignoreResourceAttributes),
		KeepIdentifyingResourceAttributes: f.keepIdentifying,
		PromoteScopeMetadata:              f.promoteScopeMetadata,
		GroupBy:                           splitList(f.groupBy),
		Delta:                             delta,
		UTF8Names:                         utf8Names,
	}
	if err := s.Validate(); err != nil {
		return otlp.Settings{}, err
	}
	return s, nil
}

// splitList splits each value on commas; empty items are left for the
// settings' check to refuse, so that "a,,b" is an error, not "a,b".
func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		out = append(out, strings.Split(v, ",")...)
	}
	return out
}

// clusterSettings adds to m the OTLP flags that change what is stored and
// are not at their defaults, for the cluster's settings check: replicas
// that translated differently would store different groups for one
// request, depending on which one leads. Defaults are left out so that a
// cluster created before these flags existed keeps the same settings.
func (f *otlpFlags) clusterSettings(m map[string]string) {
	set := func(name, value, def string) {
		if value != def {
			m[name] = value
		}
	}
	set("otlp.translation-strategy", f.translationStrategy, otlp.DefaultTranslationStrategy)
	set("otlp.promote-resource-attributes", strings.Join(splitList(f.promoteResourceAttributes), ","), "")
	set("otlp.promote-all-resource-attributes", strconv.FormatBool(f.promoteAll), "false")
	set("otlp.ignore-resource-attributes", strings.Join(splitList(f.ignoreResourceAttributes), ","), "")
	set("otlp.keep-identifying-resource-attributes", strconv.FormatBool(f.keepIdentifying), "false")
	set("otlp.promote-scope-metadata", strconv.FormatBool(f.promoteScopeMetadata), "false")
	set("otlp.group-by", strings.Join(splitList(f.groupBy), ","), "")
	set("otlp.delta", f.delta, "accumulate")
}
