package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/pushgate/pushgate/otlp"
)

func TestOTLPFlagsBecomeTheTranslationSettings(t *testing.T) {
	c, err := parseFlags([]string{
		"--otlp.promote-resource-attributes=k8s.pod.name, deployment.environment",
		"--otlp.promote-resource-attributes", "cloud.region",
		"--otlp.group-by=service.instance.id",
		"--otlp.keep-identifying-resource-attributes",
		"--otlp.promote-scope-metadata",
		"--otlp.delta=reject",
		"--otlp.translation-strategy=UnderscoreEscapingWithoutSuffixes",
	})
	if err != nil {
		t.Fatal(err)
	}
	s := c.otlpSettings
	if want := []string{"k8s.pod.name", "deployment.environment", "cloud.region"}; !slices.Equal(s.PromoteResourceAttributes, want) {
		t.Errorf("promoted %q, want %q", s.PromoteResourceAttributes, want)
	}
	if !slices.Equal(s.GroupBy, []string{"service.instance.id"}) || !s.KeepIdentifyingResourceAttributes || !s.PromoteScopeMetadata ||
		s.Delta != otlp.Reject || s.TranslationStrategy != "UnderscoreEscapingWithoutSuffixes" {
		t.Errorf("settings %+v do not follow the flags", s)
	}
	d, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := d.otlpSettings; s.Delta != otlp.Accumulate || s.TranslationStrategy != otlp.DefaultTranslationStrategy || len(s.GroupBy) != 0 {
		t.Errorf("default settings %+v, want accumulate, %s, no group-by", s, otlp.DefaultTranslationStrategy)
	}
}

func TestOTLPFlagsRefuseWhatCannotWork(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a UTF-8 strategy without UTF-8 names", []string{"--otlp.translation-strategy=NoTranslation"}, "--push.enable-utf8-names"},
		{"an unknown strategy", []string{"--otlp.translation-strategy=Whatever"}, "otlp.translation-strategy"},
		{"an empty attribute in a list", []string{"--otlp.promote-resource-attributes=a,,b"}, "empty"},
		{"promoting all and a list", []string{"--otlp.promote-all-resource-attributes", "--otlp.promote-resource-attributes=a"}, "together"},
		{"an unknown delta mode", []string{"--otlp.delta=sum"}, "otlp.delta"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseFlags(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parseFlags = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := parseFlags([]string{"--otlp.translation-strategy=NoTranslation", "--push.enable-utf8-names"}); err != nil {
		t.Errorf("NoTranslation with UTF-8 names: %v", err)
	}
}

func TestOTLPFlagsAtTheirDefaultsLeaveTheClusterSettingsAsBefore(t *testing.T) {
	c, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name := range clusterSettings(c, "") {
		if strings.HasPrefix(name, "otlp.") {
			t.Errorf("default setting %s recorded: a cluster created before OTLP would refuse this replica", name)
		}
	}
	c, err = parseFlags([]string{"--otlp.group-by=host.name", "--otlp.delta=reject"})
	if err != nil {
		t.Fatal(err)
	}
	m := clusterSettings(c, "")
	if m["otlp.group-by"] != "host.name" || m["otlp.delta"] != "reject" {
		t.Errorf("cluster settings %v lack the OTLP flags that change what is stored", m)
	}
}
