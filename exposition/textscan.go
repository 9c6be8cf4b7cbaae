package exposition

// The text parser's lexical layer: names, blanks, label values and HELP
// text, read from one line of the body. Names and values without escapes
// are substrings of the line (fast path); values with escapes are built
// anew (slow path).

import (
	"strings"
)

// scanMetricName returns the unquoted metric name starting at line[i]
// ([a-zA-Z_:][a-zA-Z0-9_:]*, empty if line[i] cannot start one) and the
// index after it. A quote in or right after the name means the quoted
// syntax, which is left to expfmt.
func scanMetricName(line string, i int) (string, int, error) {
	if i == len(line) || !(isNameStart(line[i]) || line[i] == ':') {
		if i < len(line) && line[i] == '"' {
			return "", 0, errFallback
		}
		return "", i, nil
	}
	j := i + 1
	for j < len(line) && (isNameStart(line[j]) || line[j] == ':' || isDigit(line[j])) {
		j++
	}
	if j < len(line) && line[j] == '"' {
		return "", 0, errFallback
	}
	return line[i:j], j, nil
}

// scanLabelName is scanMetricName for label names ([a-zA-Z_][a-zA-Z0-9_]*).
func scanLabelName(line string, i int) (string, int, error) {
	if i == len(line) || !isNameStart(line[i]) {
		if i < len(line) && line[i] == '"' {
			return "", 0, errFallback
		}
		return "", i, nil
	}
	j := i + 1
	for j < len(line) && (isNameStart(line[j]) || isDigit(line[j])) {
		j++
	}
	if j < len(line) && line[j] == '"' {
		return "", 0, errFallback
	}
	return line[i:j], j, nil
}

func isNameStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// skipBlank returns the index of the first byte at or after i that is not a
// blank or tab.
func skipBlank(s string, i int) int {
	for i < len(s) && isBlank(s[i]) {
		i++
	}
	return i
}

// byteAt returns line[i], or the LF that ended the line.
func byteAt(line string, i int) byte {
	if i < len(line) {
		return line[i]
	}
	return '\n'
}

// scanLabelValue returns the label value starting at line[i] (just after
// its opening quote) and the index after its closing quote.
func (p *textParser) scanLabelValue(line string, i int) (string, int, error) {
	for j := i; j < len(line); j++ {
		switch line[j] {
		case '"':
			return line[i:j], j + 1, nil // Fast path: no escapes, a substring.
		case '\\':
			return p.scanEscapedLabelValue(line, i)
		}
	}
	return "", 0, p.errorf("label value %q contains unescaped new-line", line[i:])
}

// scanEscapedLabelValue is scanLabelValue's slow path for values holding
// escapes: it builds the unescaped value in a new string.
func (p *textParser) scanEscapedLabelValue(line string, i int) (string, int, error) {
	var b strings.Builder
	for j := i; j < len(line); j++ {
		c := line[j]
		switch c {
		case '"':
			return b.String(), j + 1, nil
		case '\\':
			j++
			if j == len(line) {
				return "", 0, p.errorf("label value %q contains unescaped new-line", b.String())
			}
			switch line[j] {
			case '"', '\\':
				b.WriteByte(line[j])
			case 'n':
				b.WriteByte('\n')
			default:
				return "", 0, p.escapeError(line[j])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, p.errorf("label value %q contains unescaped new-line", b.String())
}

// unescape returns HELP text with \\, \n and \" decoded. Text without a
// backslash is returned as is (fast path).
func (p *textParser) unescape(s string) (string, error) {
	if strings.IndexByte(s, '\\') < 0 {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for j := 0; j < len(s); j++ {
		c := s[j]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		j++
		esc := byte('\n') // A backslash that ends the line escapes its LF.
		if j < len(s) {
			esc = s[j]
		}
		switch esc {
		case '\\', '"':
			b.WriteByte(esc)
		case 'n':
			b.WriteByte('\n')
		default:
			return "", p.escapeError(esc)
		}
	}
	return b.String(), nil
}

// escapeError reports a backslash followed by c, quoted so that the message
// stays on one line even when c is the LF.
func (p *textParser) escapeError(c byte) error {
	return p.errorf("invalid escape sequence %q", []byte{'\\', c})
}
