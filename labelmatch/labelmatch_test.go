package labelmatch

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     string // matchers joined by ",", or the error substring after "ERR "
	}{
		{"equality", `job="a"`, `job="a"`},
		{"spaces around the operator", ` job  =  "a" `, `job="a"`},
		{"not equal", `instance!="x"`, `instance!="x"`},
		{"regexp", `job=~"backup-.*"`, `job=~"backup-.*"`},
		{"negative regexp", `job!~"b.*"`, `job!~"b.*"`},
		{"selector", `{job="a",x=~"b"}`, `job="a",x=~"b"`},
		{"selector with trailing comma", `{job="a",}`, `job="a"`},
		{"list without braces", `job="a", env!="dev"`, `job="a",env!="dev"`},
		{"single quotes", `job='it"s'`, `job="it\"s"`},
		{"raw string", "job=~`a\\d+`", `job=~"a\\d+"`},
		{"escapes", `job="a\"b\\c"`, `job="a\"b\\c"`},
		{"empty value", `instance=""`, `instance=""`},
		{"quoted UTF-8 name", `"service.name"="x"`, `"service.name"="x"`},
		{"no operator", `job`, `ERR expected one of = != =~ !~`},
		{"no value", `job=`, `ERR expected a quoted value`},
		{"unquoted value", `job=a`, `ERR expected a quoted value`},
		{"unterminated", `job="a`, `ERR unterminated quoted string`},
		{"unclosed selector", `{job="a"`, `ERR expected , or }`},
		{"trailing junk", `job="a" x`, `ERR unexpected "x"`},
		{"bad regexp", `job=~"("`, `ERR bad regular expression "(" for label "job": missing closing )`},
		{"bad regexp holding a newline", "job=~\"(\\n\"", `ERR bad regular expression "(\n" for label "job": missing closing )`},
		{"bad escape in a regexp", `job=~"a\\qb"`, `ERR bad regular expression "a\\qb" for label "job": invalid escape sequence at "\\q"`},
		{"empty", ``, `ERR expected a label name`},
		{"empty selector", `{}`, `ERR no matcher`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := Parse(tc.in)
			if want, ok := strings.CutPrefix(tc.want, "ERR "); ok {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("Parse(%q) error = %v, want one containing %q", tc.in, err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			var got []string
			for _, m := range ms {
				got = append(got, m.String())
			}
			if strings.Join(got, ",") != tc.want {
				t.Fatalf("Parse(%q) = %s, want %s", tc.in, strings.Join(got, ","), tc.want)
			}
		})
	}
}

func TestMatchersAreAnchored(t *testing.T) {
	for _, tc := range []struct {
		matcher, value string
		want           bool
	}{
		{`job=~"back"`, "backup", false},
		{`job=~"back.*"`, "backup", true},
		{`job=~"a|b"`, "b", true},
		{`job!~"a|b"`, "ab", true},
		{`job=~"a.b"`, "a\nb", true},
		{`instance=""`, "", true},
		{`instance!=""`, "", false},
	} {
		ms, err := Parse(tc.matcher)
		if err != nil {
			t.Fatal(err)
		}
		if got := ms[0].Matches(tc.value); got != tc.want {
			t.Errorf("%s matches %q = %v, want %v", tc.matcher, tc.value, got, tc.want)
		}
	}
}

func TestMatchLabels(t *testing.T) {
	ms, err := Parse(`{job=~"backup-.*",env="prod",instance=""}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"all hold, instance absent", map[string]string{"job": "backup-db", "env": "prod"}, true},
		{"instance present and non-empty", map[string]string{"job": "backup-db", "env": "prod", "instance": "x"}, false},
		{"env absent", map[string]string{"job": "backup-db"}, false},
		{"job does not match", map[string]string{"job": "nightly", "env": "prod"}, false},
		{"regexp is anchored", map[string]string{"job": "xbackup-db", "env": "prod"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MatchLabels(ms, tc.labels); got != tc.want {
				t.Fatalf("MatchLabels(%v) = %v, want %v", tc.labels, got, tc.want)
			}
		})
	}
}
