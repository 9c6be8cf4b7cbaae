package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestDocumentationLinksResolve checks every relative link in the README,
// CONTRIBUTING.md, the CHANGELOG, bench/README.md and docs/*.md: the file it
// names exists and, for a link with a #fragment into a Markdown file, that
// file has a heading with that anchor. A section moved between pages, or a
// heading renamed, fails here rather than in a reader's browser.
func TestDocumentationLinksResolve(t *testing.T) {
	const root = "../.."
	files := []string{"README.md", "CONTRIBUTING.md", "CHANGELOG.md", "bench/README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatalf("no docs/*.md under %s", root)
	}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, rel)
	}
	for _, p := range brokenLinks(t, root, files) {
		t.Error(p)
	}
}

// TestBrokenLinksAreReported runs the check on pages with a missing file, a
// missing heading and good links, so the check above cannot pass by finding
// nothing.
func TestBrokenLinksAreReported(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/b.md", "# B page\n\n## Read and write guarantees\n\n```sh\n# not a heading\n```\n")
	write("a.md", strings.Join([]string{
		"# A",
		"[good file](docs/b.md) [good anchor](docs/b.md#read-and-write-guarantees) [own](#a)",
		"[external](https://example.com/x.md#nope) ![image](docs/b.md) `[in code](missing.md)`",
		"[missing file](docs/c.md)",
		"[missing anchor](docs/b.md#not-a-heading)",
		"[defined]: docs/b.md#read-and-write-guarantees",
		"```",
		"[in a fence](missing.md)",
		"```",
	}, "\n"))
	got := brokenLinks(t, dir, []string{"a.md"})
	want := []string{
		`a.md:4: link "docs/c.md": no file docs/c.md`,
		`a.md:5: link "docs/b.md#not-a-heading": docs/b.md has no heading with anchor #not-a-heading`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestGitHubAnchor(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Quick start", "quick-start"},
		{"High availability (cluster mode on etcd)", "high-availability-cluster-mode-on-etcd"},
		{"Security: TLS, authentication, permissions and limits", "security-tls-authentication-permissions-and-limits"},
		{"Debian (`prometheus-pushgateway`)", "debian-prometheus-pushgateway"},
		{"Against the reference, memory-only", "against-the-reference-memory-only"},
		{"What a 2xx and a scrape promise", "what-a-2xx-and-a-scrape-promise"},
		{"The `push_time_seconds` [family](x.md)", "the-push_time_seconds-family"},
		{"Größe ünd 😀 emoji", "größe-ünd--emoji"},
	} {
		if got := githubAnchor(tc.heading); got != tc.want {
			t.Errorf("githubAnchor(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

var (
	// inlineLink matches [text](target) and ![alt](target), with an
	// optional "title".
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// codeSpan matches inline code, whose brackets are not links.
	codeSpan = regexp.MustCompile("`+[^`]*`+")
	// linkDefinition matches a reference link's definition, "[name]: target".
	linkDefinition = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	// headingLink matches a link or image inside a heading, which the
	// anchor takes the text of.
	headingLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	// atxHeading matches "## Heading ##".
	atxHeading = regexp.MustCompile(`^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$`)
	// scheme matches a link with a scheme (https:, mailto:): not checked.
	scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// brokenLinks returns one line per relative link in files (paths relative
// to root) that does not resolve, as "file:line: link "target": why".
func brokenLinks(t *testing.T, root string, files []string) []string {
	t.Helper()
	anchors := map[string]map[string]bool{} // by path relative to root
	anchorsOf := func(rel string) (map[string]bool, error) {
		if a, ok := anchors[rel]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return nil, err
		}
		a := headingAnchors(string(b))
		anchors[rel] = a
		return a, nil
	}
	var problems []string
	for _, file := range files {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatalf("read %s: %v", file, err)
		}
		for _, l := range links(string(b)) {
			report := func(format string, args ...any) {
				problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s", file, l.line, l.target, fmt.Sprintf(format, args...)))
			}
			if scheme.MatchString(l.target) || strings.HasPrefix(l.target, "//") {
				continue
			}
			target, fragment, _ := strings.Cut(l.target, "#")
			target, err := url.PathUnescape(target)
			if err != nil {
				report("%v", err)
				continue
			}
			rel := filepath.ToSlash(filepath.Clean(file))
			if target != "" {
				rel = filepath.ToSlash(filepath.Join(filepath.Dir(file), target))
				if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
					report("no file %s", rel)
					continue
				}
			}
			if fragment == "" || !strings.HasSuffix(rel, ".md") {
				continue
			}
			a, err := anchorsOf(rel)
			if err != nil {
				report("%v", err)
				continue
			}
			if fragment, err = url.PathUnescape(fragment); err != nil {
				report("%v", err)
				continue
			}
			if !a[fragment] {
				report("%s has no heading with anchor #%s", rel, fragment)
			}
		}
	}
	return problems
}

type link struct {
	line   int
	target string
}

// links returns the inline links, images and reference link definitions of
// a Markdown text, outside fenced code blocks and code spans.
func links(text string) []link {
	var out []link
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		if isFence(line) {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if m := linkDefinition.FindStringSubmatch(line); m != nil {
			out = append(out, link{line: i + 1, target: m[1]})
			continue
		}
		for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			out = append(out, link{line: i + 1, target: m[1]})
		}
	}
	return out
}

// headingAnchors returns the anchors GitHub gives the ATX headings of a
// Markdown text, outside fenced code blocks; a repeated anchor gets -1, -2...
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if isFence(line) {
			fenced = !fenced
			continue
		}
		m := atxHeading.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		a := githubAnchor(m[1])
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

func isFence(line string) bool {
	l := strings.TrimLeft(line, " ")
	return strings.HasPrefix(l, "```") || strings.HasPrefix(l, "~~~")
}

// githubAnchor is the anchor GitHub gives a heading: its rendered text (code
// spans and links as their text) in lower case, with every character but
// letters, digits, '-', '_' and spaces dropped, and each space turned into
// '-'.
func githubAnchor(heading string) string {
	heading = headingLink.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
