package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestFlagHelpPointsOnlyToDocumentsThatExist reads every flag's help: a
// document it names must exist in the repository, and a section it names
// must be a heading of that document.
func TestFlagHelpPointsOnlyToDocumentsThatExist(t *testing.T) {
	c, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	url := regexp.MustCompile(`https?://\S+`)
	doc := regexp.MustCompile(`[\w./-]+\.md\b`)
	section := regexp.MustCompile(`section '([^']+)' of ([\w./-]+\.md)`)
	for _, f := range c.app.Model().Flags {
		for _, name := range doc.FindAllString(url.ReplaceAllString(f.Help, ""), -1) {
			if _, err := os.Stat(filepath.Join("..", "..", name)); err != nil {
				t.Errorf("--%s's help names %s, which does not exist: %v", f.Name, name, err)
			}
		}
		for _, m := range section.FindAllStringSubmatch(f.Help, -1) {
			b, err := os.ReadFile(filepath.Join("..", "..", m[2]))
			if err == nil && !regexp.MustCompile(`(?m)^#+ `+regexp.QuoteMeta(m[1])).Match(b) {
				t.Errorf("--%s's help names the section %q of %s, which has no such heading", f.Name, m[1], m[2])
			}
		}
	}
}

func TestFlagValuesAreCheckedAtStart(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string // in the error
	}{
		{"an unparsable memory limit names its flag", []string{"--store.memory-limit=xyz"}, "--store.memory-limit"},
		{"an unparsable duration names its flag", []string{"--persistence.interval=soon"}, "--persistence.interval"},
		{"an unparsable number names its flag", []string{"--push.max-series=many"}, "--push.max-series"},
		{"the bad flag is named, not the first one given", []string{"--push.max-series=5", "--web.read-timeout=x"}, "--web.read-timeout"},
		{"a telemetry path without a leading slash is refused", []string{"--web.telemetry-path=metrics"}, `--web.telemetry-path must start with "/"`},
		{"more than one core for precompression is refused", []string{"--web.gzip-precompress-cpu=1.5"}, "--web.gzip-precompress-cpu must be between 0 and 1"},
		{"a negative share for precompression is refused", []string{"--web.gzip-precompress-cpu=-0.1"}, "--web.gzip-precompress-cpu must be between 0 and 1"},
		{"NaN for precompression is refused", []string{"--web.gzip-precompress-cpu=NaN"}, "--web.gzip-precompress-cpu must be between 0 and 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseFlags(tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
	for _, ok := range [][]string{{"--web.telemetry-path=/custom/path"}, {"--store.memory-limit=2GiB"}, {"--web.gzip-precompress-cpu=0"}} {
		if _, err := parseFlags(ok); err != nil {
			t.Errorf("%v refused: %v", ok, err)
		}
	}
}
