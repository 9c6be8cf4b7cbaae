// Package labelmatch parses and evaluates Prometheus label matchers
// (`job=~"backup-.*"`, `{job="a",env!="dev"}`) for selecting metric groups by
// their grouping labels: the admin API's match[] and the permission file's
// push selectors use the same syntax and semantics. Regular expressions are
// fully anchored, as in Prometheus.
package labelmatch

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pushgate/pushgate/exposition"
)

// Op is a matcher's operator.
type Op string

// The four Prometheus matcher operators.
const (
	Equal    Op = "="
	NotEqual Op = "!="
	Regexp   Op = "=~"
	NotRegex Op = "!~"
)

// Matcher matches one label's value.
type Matcher struct {
	// Name is the label the matcher looks at.
	Name string
	// Op is the comparison.
	Op Op
	// Value is the literal or, for =~ and !~, the regular expression.
	Value string
	re    *regexp.Regexp // for =~ and !~, anchored
}

// String renders the matcher in Prometheus syntax; a name that is not a
// legacy label name is quoted, as Prometheus 3 writes it, so that the result
// parses back to the same matcher.
func (m Matcher) String() string {
	return exposition.QuoteLabelName(m.Name) + string(m.Op) + strconv.Quote(m.Value)
}

// Matches reports whether the label value v satisfies m. A label that is
// absent should be passed as "", as Prometheus does.
func (m Matcher) Matches(v string) bool {
	switch m.Op {
	case Equal:
		return v == m.Value
	case NotEqual:
		return v != m.Value
	case Regexp:
		return m.re.MatchString(v)
	default:
		return !m.re.MatchString(v)
	}
}

// Parse parses `name op "value"`, a comma-separated list of those, or a
// selector `{…}` holding such a list. An empty selector is an error.
func Parse(s string) ([]Matcher, error) {
	p := matcherParser{src: s}
	ms, err := p.parse()
	if err != nil {
		return nil, fmt.Errorf("invalid matcher %q: %w", s, err)
	}
	return ms, nil
}

// matcherParser is a small hand-written scanner for label matchers; the
// Prometheus parser would pull in the whole PromQL package.
type matcherParser struct {
	src string
	pos int
}

func (p *matcherParser) parse() ([]Matcher, error) {
	p.skipSpace()
	braced := p.peek() == '{'
	if braced {
		p.pos++
	}
	var out []Matcher
	for {
		p.skipSpace()
		if braced && p.peek() == '}' && len(out) == 0 {
			break // {} is an empty selector
		}
		m, err := p.matcher()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
		p.skipSpace()
		if p.peek() != ',' {
			break
		}
		p.pos++
		p.skipSpace()
		if braced && p.peek() == '}' {
			break // trailing comma, as Prometheus allows
		}
	}
	if braced {
		if p.peek() != '}' {
			return nil, p.errorf("expected , or }")
		}
		p.pos++
		p.skipSpace()
	}
	if p.pos != len(p.src) {
		return nil, p.errorf("unexpected %q", p.src[p.pos:])
	}
	if len(out) == 0 {
		return nil, errors.New("no matcher")
	}
	return out, nil
}

// matcher reads one `name op "value"`.
func (p *matcherParser) matcher() (Matcher, error) {
	var m Matcher
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos], p.pos == start) {
		p.pos++
	}
	if p.pos == start {
		if p.peek() == '"' {
			// A quoted (UTF-8) label name, as Prometheus 3 writes them.
			name, err := p.quoted()
			if err != nil {
				return m, err
			}
			m.Name = name
		} else {
			return m, p.errorf("expected a label name")
		}
	} else {
		m.Name = p.src[start:p.pos]
	}
	p.skipSpace()
	switch {
	case strings.HasPrefix(p.src[p.pos:], "=~"):
		m.Op = Regexp
	case strings.HasPrefix(p.src[p.pos:], "!~"):
		m.Op = NotRegex
	case strings.HasPrefix(p.src[p.pos:], "!="):
		m.Op = NotEqual
	case strings.HasPrefix(p.src[p.pos:], "="):
		m.Op = Equal
	default:
		return m, p.errorf("expected one of = != =~ !~ after %q", m.Name)
	}
	p.pos += len(m.Op)
	p.skipSpace()
	v, err := p.quoted()
	if err != nil {
		return m, err
	}
	m.Value = v
	if m.Op == Regexp || m.Op == NotRegex {
		anchored := "^(?s:" + v + ")$"
		re, err := regexp.Compile(anchored)
		if err != nil {
			// regexp's own message holds the expression unquoted, which
			// may span lines; the reason must stay on one line. The part
			// at fault is named unless it is the whole (anchored) value.
			reason := err.Error()
			var se *syntax.Error
			if errors.As(err, &se) {
				reason = string(se.Code)
				if se.Expr != anchored {
					reason += fmt.Sprintf(" at %q", se.Expr)
				}
			}
			return m, fmt.Errorf("bad regular expression %q for label %q: %s", v, m.Name, reason)
		}
		m.re = re
	}
	return m, nil
}

// quoted reads a "double", 'single' or `raw` quoted string.
func (p *matcherParser) quoted() (string, error) {
	q := p.peek()
	if q != '"' && q != '\'' && q != '`' {
		return "", p.errorf("expected a quoted value")
	}
	start := p.pos
	p.pos++
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '\\' && q != '`':
			p.pos += 2
			continue
		case c == q:
			p.pos++
			lit := p.src[start:p.pos]
			if q == '\'' {
				// Single-quoted like Prometheus: reuse Go's rules by
				// swapping the quotes.
				inner := strings.ReplaceAll(lit[1:len(lit)-1], `"`, `\"`)
				inner = strings.ReplaceAll(inner, `\'`, `'`)
				lit = `"` + inner + `"`
			}
			v, err := strconv.Unquote(lit)
			if err != nil {
				return "", fmt.Errorf("bad quoted string %q: %w", p.src[start:p.pos], err)
			}
			if !utf8.ValidString(v) {
				return "", fmt.Errorf("quoted string %q is not valid UTF-8", p.src[start:p.pos])
			}
			return v, nil
		}
		p.pos++
	}
	return "", p.errorf("unterminated quoted string")
}

func (p *matcherParser) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *matcherParser) skipSpace() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t' || p.src[p.pos] == '\n') {
		p.pos++
	}
}

func (p *matcherParser) errorf(format string, args ...any) error {
	return fmt.Errorf("at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

// isNameByte reports whether c may appear in a legacy label name.
func isNameByte(c byte, first bool) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9')
}

// MatchLabels reports whether every matcher in ms holds for the label set
// labels, an absent label matching as the empty value.
func MatchLabels(ms []Matcher, labels map[string]string) bool {
	for _, m := range ms {
		if !m.Matches(labels[m.Name]) {
			return false
		}
	}
	return true
}
