package main

import (
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"
)

// TestTheHelmValuesRunPushgateWithPersistence reads deploy/helm/values.yaml
// (values for the prometheus-community prometheus-pushgateway chart) and
// checks that its args parse as pushgate flags, that the persistence file
// lies on the chart's volume, and that the pod runs as the image's user.
func TestTheHelmValuesRunPushgateWithPersistence(t *testing.T) {
	b, err := os.ReadFile("../../deploy/helm/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Image struct {
			Repository string `yaml:"repository"`
			Tag        string `yaml:"tag"`
		} `yaml:"image"`
		ExtraArgs        []string `yaml:"extraArgs"`
		PersistentVolume struct {
			Enabled   bool   `yaml:"enabled"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"persistentVolume"`
		SecurityContext struct {
			RunAsUser int `yaml:"runAsUser"`
		} `yaml:"securityContext"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if v.Image.Repository == "" || strings.Contains(v.Image.Repository, "prometheus/pushgateway") {
		t.Errorf("image.repository = %q, want pushgate's image", v.Image.Repository)
	}
	if want := strings.TrimSpace(readFile(t, "../../VERSION")); v.Image.Tag != want {
		t.Errorf("image.tag = %q, want the VERSION file's %q", v.Image.Tag, want)
	}
	c, err := parseFlags(v.ExtraArgs)
	if err != nil {
		t.Fatalf("extraArgs %v: %v", v.ExtraArgs, err)
	}
	if !v.PersistentVolume.Enabled || c.persistenceFile == "" || path.Dir(c.persistenceFile) != path.Clean(v.PersistentVolume.MountPath) {
		t.Errorf("persistence: volume enabled %v at %q, --persistence.file=%q", v.PersistentVolume.Enabled, v.PersistentVolume.MountPath, c.persistenceFile)
	}
	if v.SecurityContext.RunAsUser != 65534 {
		t.Errorf("securityContext.runAsUser = %d, want the image's 65534", v.SecurityContext.RunAsUser)
	}
}

// TestTheSystemdUnitReadsDebiansDefaultFile checks deploy/systemd: the unit
// runs /usr/bin/pushgate with $ARGS from /etc/default/pushgate as the
// prometheus user, reloads with SIGHUP, may write where the default file's
// persistence file lies, and the default file's ARGS parse as pushgate flags
// naming Debian's persistence file. systemd-analyze verify runs in
// scripts/deploy-check.sh.
func TestTheSystemdUnitReadsDebiansDefaultFile(t *testing.T) {
	unit := readFile(t, "../../deploy/systemd/pushgate.service")
	for _, want := range []string{
		"User=prometheus",
		"EnvironmentFile=-/etc/default/pushgate",
		"ExecStart=/usr/bin/pushgate $ARGS",
		"ExecReload=/bin/kill -HUP $MAINPID",
		"ProtectSystem=strict",
		"NoNewPrivileges=yes",
	} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(want) + `$`).MatchString(unit) {
			t.Errorf("the unit lacks the line %s", want)
		}
	}
	m := regexp.MustCompile(`(?m)^ARGS="([^"]*)"$`).FindStringSubmatch(readFile(t, "../../deploy/systemd/pushgate.default"))
	if m == nil {
		t.Fatal(`pushgate.default has no ARGS="…" line`)
	}
	c, err := parseFlags(strings.Fields(m[1]))
	if err != nil {
		t.Fatalf("ARGS %q: %v", m[1], err)
	}
	if c.persistenceFile != "/var/lib/prometheus/pushgateway.data" {
		t.Errorf("--persistence.file = %q, want Debian's /var/lib/prometheus/pushgateway.data", c.persistenceFile)
	}
	rw := regexp.MustCompile(`(?m)^ReadWritePaths=(.*)$`).FindStringSubmatch(unit)
	if rw == nil || !strings.Contains(" "+rw[1]+" ", " "+path.Dir(c.persistenceFile)+" ") {
		t.Errorf("ReadWritePaths %v does not hold %s", rw, path.Dir(c.persistenceFile))
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
