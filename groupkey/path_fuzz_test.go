package groupkey

import (
	"encoding/base64"
	"maps"
	"net/url"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pushgate/pushgate/exposition"
)

// FuzzParsePath checks the grouping-key decoder: it never panics, a
// rejected path gets a one-line reason, and an accepted key is well formed
// and survives a round trip through the encoding clients use (base64url for
// every value, "U__" escaping for UTF-8 label names) and through Key.Path.
func FuzzParsePath(f *testing.F) {
	for _, seed := range []string{
		"job/J",
		"job/J/",
		"job/J/instance/i1/zone/eu",
		"job@base64/Zm9v",
		"job@base64/YS9i",
		"job/J/path@base64/L3Zhci90bXA",
		"job/J/path@base64/L3Zhci90bXAveA==",
		"job/j7/path@base64/L3Zhci90bXA/empty@base64/=",
		"job/J/e@base64/%3D",
		"job/J/a/a%20b",
		"job/J/a/value+with+spaces",
		"job/a%2Fb/x/c%2Fd",
		"job/a/job/b",
		"job/J/U__foo_2e_bar/x",
		"job/J/U__U____foo/x",
		"job/J/U__a_2d_b@base64/Zm9v",
		"job/J/lab.el/x",
		"job/",
		"job",
		"job//a/b",
		"job@base64/!!!",
		"job/J/a/b/c",
		"job/J/a/b/",
		"job/J/__res/x",
		"job/J//x",
		"job/J/a//b/c",
		"job/J/a/%zz",
		"job/%ff%fe",
		"job/J/a@base64/__8",
		"job/J/a/b/a/c",
		"job/J/U___1f600_/smile",
		"job/J/U__x_110000_/v",
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, path string, utf8Names bool) {
		opts := PathOptions{UTF8Names: utf8Names}
		sorted, err := parsePath(path, opts)
		if err != nil {
			requireOneLineError(t, err)
			if sorted != nil {
				t.Fatalf("error %q with labels %v", err, sorted)
			}
			return
		}
		labels := requireSortedLabels(t, sorted)
		requireWellFormedKey(t, labels, utf8Names)
		if key, _ := ParsePath(path, opts); key.ID() != New(labels).ID() {
			t.Fatalf("%q parsed to key %q, but its labels %v make %q", path, key.ID(), labels, New(labels).ID())
		}
		encoded := encodeGroupingPath(labels, utf8Names)
		againSorted, err := parsePath(encoded, opts)
		if err != nil {
			t.Fatalf("%q parsed to %v, re-encoded as %q, which is rejected: %v", path, labels, encoded, err)
		}
		if again := requireSortedLabels(t, againSorted); !maps.Equal(labels, again) {
			t.Fatalf("%q parsed to %v, re-encoded as %q, which parses to %v", path, labels, encoded, again)
		}
		key := New(labels)
		back, err := ParsePath(key.Path(utf8Names), opts)
		if err != nil {
			t.Fatalf("%q parsed to %v, whose Path %q is rejected: %v", path, labels, key.Path(utf8Names), err)
		}
		if back.ID() != key.ID() {
			t.Fatalf("%q parsed to %v, whose Path %q parses to %v", path, key, key.Path(utf8Names), back)
		}
	})
}

// requireSortedLabels checks that labels are sorted by name, each name
// once, and returns them as a map.
func requireSortedLabels(t *testing.T, labels []Label) map[string]string {
	t.Helper()
	m := make(map[string]string, len(labels))
	for i, l := range labels {
		if i > 0 && labels[i-1].Name >= l.Name {
			t.Fatalf("labels %v are not sorted by name, each name once", labels)
		}
		m[l.Name] = l.Value
	}
	return m
}

// requireWellFormedKey checks what every accepted grouping key must hold.
func requireWellFormedKey(t *testing.T, labels map[string]string, utf8Names bool) {
	t.Helper()
	if labels["job"] == "" {
		t.Fatalf("accepted key %v has no job", labels)
	}
	for n, v := range labels {
		if !exposition.ValidLabelName(n, utf8Names) || strings.HasPrefix(n, "__") {
			t.Fatalf("accepted key %v has the improper label name %q", labels, n)
		}
		if !utf8.ValidString(v) {
			t.Fatalf("accepted key %v has the invalid UTF-8 value %q", labels, v)
		}
	}
}

// encodeGroupingPath writes labels as a push path below /metrics/, the way
// a careful client does: every value base64url-encoded ("=" for the empty
// value) and, with UTF-8 names, every label name in the "U__" escaping.
func encodeGroupingPath(labels map[string]string, utf8Names bool) string {
	names := make([]string, 0, len(labels))
	for n := range labels {
		if n != "job" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("job@base64/" + base64Value(labels["job"]))
	for _, n := range names {
		name := n
		if utf8Names {
			name = escapeName(n)
		}
		b.WriteString("/" + url.PathEscape(name) + "@base64/" + base64Value(labels[n]))
	}
	return b.String()
}

// base64Value encodes a path value in unpadded base64url, "=" when empty.
func base64Value(v string) string {
	if v == "" {
		return "="
	}
	return base64.RawURLEncoding.EncodeToString([]byte(v))
}

// requireOneLineError fails unless err's message is one non-empty line.
func requireOneLineError(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	if msg == "" || strings.ContainsAny(msg, "\r\n") {
		t.Fatalf("error is not one non-empty line: %q", msg)
	}
}
