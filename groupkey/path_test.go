package groupkey

import (
	"encoding/base64"
	"fmt"
	"maps"
	"strings"
	"testing"
)

func TestParsePath(t *testing.T) {
	// How the client libraries write a value holding '/'.
	goValue := "path@base64/" + base64.RawURLEncoding.EncodeToString([]byte("/var/tmp"))
	pythonValue := "path@base64/" + base64.URLEncoding.EncodeToString([]byte("/var/tmp/x"))
	pythonJob := "job@base64/" + base64.URLEncoding.EncodeToString([]byte("a/b"))
	// More label pairs than parsePath scans for a repeated name.
	var many strings.Builder
	manyWant := map[string]string{"job": "J"}
	for i := range maxScannedLabels + 4 {
		fmt.Fprintf(&many, "/l%02d/v%d", i, i)
		manyWant[fmt.Sprintf("l%02d", i)] = fmt.Sprint("v", i)
	}

	tests := []struct {
		name    string
		path    string
		utf8    bool
		want    map[string]string
		wantErr string
	}{
		{name: "a job alone is the key", path: "job/J", want: map[string]string{"job": "J"}},
		{name: "a trailing slash after the job is ignored", path: "job/J/", want: map[string]string{"job": "J"}},
		{name: "label pairs follow the job", path: "job/J/instance/i1/zone/eu", want: map[string]string{"job": "J", "instance": "i1", "zone": "eu"}},
		{name: "a base64 job is decoded", path: "job@base64/Zm9v", want: map[string]string{"job": "foo"}},
		{name: "a padded base64 job from client_python is decoded", path: pythonJob, want: map[string]string{"job": "a/b"}},
		{name: "a base64 value from client_golang is decoded", path: "job/J/" + goValue, want: map[string]string{"job": "J", "path": "/var/tmp"}},
		{name: "a padded base64 value from client_python is decoded", path: "job/J/" + pythonValue, want: map[string]string{"job": "J", "path": "/var/tmp/x"}},
		{name: "an equals sign alone is the empty base64 value", path: "job/j7/path@base64/L3Zhci90bXA/empty@base64/=", want: map[string]string{"job": "j7", "path": "/var/tmp", "empty": ""}},
		{name: "a percent-encoded equals sign is the empty base64 value", path: "job/J/e@base64/%3D", want: map[string]string{"job": "J", "e": ""}},
		{name: "any amount of padding is accepted", path: "job/J/v@base64/Zm9v===", want: map[string]string{"job": "J", "v": "foo"}},
		{name: "a percent-encoded space is decoded", path: "job/J/a/a%20b", want: map[string]string{"job": "J", "a": "a b"}},
		{name: "a plus sign stays a plus sign", path: "job/J/a/value+with+spaces", want: map[string]string{"job": "J", "a": "value+with+spaces"}},
		{name: "an encoded slash stays inside its value", path: "job/a%2Fb/x/c%2Fd", want: map[string]string{"job": "a/b", "x": "c/d"}},
		{name: "a job label pair is overwritten by the job segment", path: "job/a/job/b", want: map[string]string{"job": "a"}},
		{name: "a U__ name is literal without UTF-8 names", path: "job/J/U__foo_2e_bar/x", want: map[string]string{"job": "J", "U__foo_2e_bar": "x"}},
		{name: "a U__ name is unescaped with UTF-8 names", path: "job/J/U__foo_2e_bar/x", utf8: true, want: map[string]string{"job": "J", "foo.bar": "x"}},
		{name: "a dotted name is accepted with UTF-8 names", path: "job/J/lab.el/x", utf8: true, want: map[string]string{"job": "J", "lab.el": "x"}},
		{name: "a base64 U__ name is unescaped with UTF-8 names", path: "job/J/U__a_2d_b@base64/Zm9v", utf8: true, want: map[string]string{"job": "J", "a-b": "foo"}},

		{name: "an empty job is an error", path: "job/", wantErr: "job name is required"},
		{name: "a missing job is an error", path: "job", wantErr: "job name is required"},
		{name: "an empty base64 job is an error", path: "job@base64/=", wantErr: "job name is required"},
		{name: "an empty job before labels is an error", path: "job//a/b", wantErr: "job name is required"},
		{name: "bad base64 in the job is an error quoting the input", path: "job@base64/!!!", wantErr: `invalid base64 encoding in job name "!!!": illegal base64 data at input byte 0`},
		{name: "a path not starting with job is an error", path: "instance/x/job/y", wantErr: "path must start with job/<job> or job@base64/<job>"},
		{name: "an empty path is an error", path: "", wantErr: "path must start with job/<job> or job@base64/<job>"},
		{name: "one label component is an odd number", path: "job/J/a", wantErr: `odd number of components in label string "a"`},
		{name: "three label components are an odd number", path: "job/J/a/b/c", wantErr: `odd number of components in label string "a/b/c"`},
		{name: "a trailing slash after a label pair is an odd number", path: "job/J/a/b/", wantErr: `odd number of components in label string "a/b/"`},
		{name: "a dash in a label name is improper", path: "job/J/a-b/x", wantErr: `improper label name "a-b"`},
		{name: "a dot in a label name is improper without UTF-8 names", path: "job/J/lab.el/x", wantErr: `improper label name "lab.el"`},
		{name: "a double-underscore label name is improper", path: "job/J/__res/x", wantErr: `improper label name "__res"`},
		{name: "a double-underscore base64 label name is improper", path: "job/J/__res@base64/eA", wantErr: `improper label name "__res"`},
		{name: "a U__ name decoding to a double underscore is improper", path: "job/J/U__" + "____res/x", utf8: true, wantErr: `improper label name "__res"`},
		{name: "an empty label name is improper", path: "job/J//x", wantErr: `improper label name ""`},
		{name: "bad base64 in a value is an error", path: "job/J/a@base64/!!", wantErr: `invalid base64 encoding for label a="!!": illegal base64 data at input byte 0`},
		{name: "bad base64 in a value of a name holding an LF gets a one-line reason", path: "job/J/\n@base64/0", utf8: true, wantErr: `invalid base64 encoding for label "\n"="0": illegal base64 data at input byte 0`},
		{name: "the standard base64 alphabet is rejected", path: "job/J/a@base64/YS+i", wantErr: `invalid base64 encoding for label a="YS+i"`},
		{name: "an empty plain value is an error", path: "job/J/a//b/c", wantErr: `label "a" has an empty value; use a@base64/= for an empty value`},
		{name: "an empty value of a name holding a CR gets a one-line reason", path: "job/0/\r/", utf8: true, wantErr: `label "\r" has an empty value; use "\r@base64/=" for an empty value`},
		{name: "a repeated label name is an error", path: "job/J/a/1/a/2", wantErr: `duplicate label name "a" in grouping key`},
		{name: "many label pairs are the key", path: "job/J" + many.String(), want: manyWant},
		{name: "a label name repeated among many is an error", path: "job/J" + many.String() + "/l03/x", wantErr: `duplicate label name "l03" in grouping key`},
		{name: "a job label among many is overwritten by the job segment", path: "job/J" + many.String() + "/job/x", want: manyWant},
		{name: "a bad percent-escape is an error naming the segment", path: "job/J/a/%zz", wantErr: `path segment "%zz": invalid URL escape "%zz"`},
		{name: "a bad percent-escape in the job is an error", path: "job/a%2", wantErr: `path segment "a%2"`},
		{name: "a value that is not UTF-8 is an error", path: "job/J/a/%ff", wantErr: `value "\xff" of label "a" is not valid UTF-8`},
		{name: "a base64 value that is not UTF-8 is an error", path: "job/J/a@base64/_w", wantErr: `value "\xff" of label "a" is not valid UTF-8`},
		{name: "a job that is not UTF-8 is an error", path: "job/%ff", wantErr: `job name "\xff" is not valid UTF-8`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, err := ParsePath(tt.path, PathOptions{UTF8Names: tt.utf8})
			got := key.Map()
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParsePath(%q) = %v, want error %q", tt.path, got, tt.wantErr)
				}
				if !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Errorf("ParsePath(%q) error = %q, want %q", tt.path, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePath(%q): %v", tt.path, err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("ParsePath(%q) = %v, want %v", tt.path, got, tt.want)
			}
		})
	}
}

func BenchmarkParsePath(b *testing.B) {
	const path = "job/nightly_backup/instance/db-1.example.org%3A9100/path@base64/L3Zhci9iYWNrdXBz"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParsePath(path, PathOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestPathIsReadBackAsTheSameKey(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		utf8   bool
		want   string
	}{
		{name: "a job alone", labels: map[string]string{"job": "j"}, want: "job@base64/ag=="},
		{name: "every value in base64, the empty one as =", labels: map[string]string{"job": "a/b", "instance": "", "path": "/var/tmp"},
			want: "job@base64/YS9i/instance@base64/=/path@base64/L3Zhci90bXA="},
		{name: "a UTF-8 name in the U__ escaping", labels: map[string]string{"job": "j", "lab.el": "x"}, utf8: true, want: "job@base64/ag==/U__lab_2e_el@base64/eA=="},
		{name: "a legacy name starting with U__ escaped under UTF-8 names", labels: map[string]string{"job": "j", "U__x": "v"}, utf8: true, want: "job@base64/ag==/U__U____x@base64/dg=="},
		{name: "a legacy name starting with U__ as it is without them", labels: map[string]string{"job": "j", "U__x": "v"}, want: "job@base64/ag==/U__x@base64/dg=="},
		{name: "a name holding a slash", labels: map[string]string{"job": "j", "a/b": "v"}, utf8: true, want: "job@base64/ag==/U__a_2f_b@base64/dg=="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := New(tt.labels)
			got := k.Path(tt.utf8)
			if got != tt.want {
				t.Errorf("Path = %q, want %q", got, tt.want)
			}
			back, err := ParsePath(got, PathOptions{UTF8Names: tt.utf8})
			if err != nil {
				t.Fatalf("ParsePath(%q): %v", got, err)
			}
			if back.ID() != k.ID() {
				t.Errorf("ParsePath(%q) = %v, want %v", got, back, k)
			}
		})
	}
}
