package exposition

import (
	"bytes"
	"strconv"

	dto "github.com/prometheus/client_model/go"
)

// templateLine is one sample line of a family's text body: the body value
// it shows, and whether that value fills a count (written as an integer in
// OpenMetrics).
type templateLine struct {
	token int32
	count bool
}

// textLines returns the sample lines of mf's text body, whose values are
// numbered (BuildTextTemplate): each line shows 1 + the index of the body
// value that fills the field it writes, and the text and OpenMetrics bodies have the same
// lines in the same order (a histogram's +Inf bucket and _count both show
// its count). seen and counts say which body values fill a field and
// which of those are counts. nil when a line shows anything else (0 for a
// field no line set, as a summary's count without a _count line).
func textLines(mf *dto.MetricFamily, seen, counts []bool, sc *[]byte) []templateLine {
	var err error
	if *sc, err = AppendBody((*sc)[:0], mf, NewFormat(EncodingText)); err != nil {
		return nil
	}
	var lines []templateLine
	for body := *sc; len(body) > 0; {
		end := bytes.IndexByte(body, '\n')
		if end < 0 {
			return nil
		}
		line := body[:end]
		body = body[end+1:]
		sp := bytes.LastIndexByte(line, ' ')
		k, err := strconv.Atoi(string(line[sp+1:]))
		k-- // Numbered from 1.
		if sp < 0 || err != nil || k < 0 || k >= len(seen) || !seen[k] {
			return nil
		}
		lines = append(lines, templateLine{token: int32(k), count: counts[k]})
	}
	return lines
}

// AppendFamilyText appends to dst the text body in enc (EncodingText or
// EncodingOpenMetrics) of family i of a push whose body matched the
// template with values vals and whose protobuf bytes AppendFamily wrote,
// given old, that family's body in enc from a push of the same skeleton
// (rendered at push, or by a scrape). Only the values change: each sample
// line's last field is written anew, as the renderer writes it (counts as
// integers in OpenMetrics), and the rest is copied. ok is false when the
// template knows no lines for the family, or old does not have them.
//
// A push that renders its text bodies (store's renderAtPush) thus does
// not decode its protobuf bytes to render them: store's BenchmarkPushText
// push=template/rendered=yes took 89.7-110.4 us with them rendered from
// the protobuf bytes and 57.6-68.5 us written this way (6 alternating
// runs).
func (t *TextTemplate) AppendFamilyText(dst []byte, i int, enc Encoding, old []byte, vals []float64) ([]byte, bool) {
	lines := t.families[i].lines
	if lines == nil {
		return dst, false
	}
	return appendLineValues(dst, old, enc, lines, vals)
}

// appendLineValues appends old, a text body in enc (EncodingText or
// EncodingOpenMetrics) of len(lines) sample lines, with the value of its
// line n set to the body value lines[n] names, written as the renderer
// writes it (a count as an integer in OpenMetrics). ok is false for
// another encoding, or another number of lines.
func appendLineValues(dst, old []byte, enc Encoding, lines []templateLine, vals []float64) ([]byte, bool) {
	if enc != EncodingText && enc != EncodingOpenMetrics {
		return dst, false
	}
	start := len(dst)
	n := 0
	for len(old) > 0 {
		end := bytes.IndexByte(old, '\n')
		sp := bytes.LastIndexByte(old[:max(end, 0)], ' ')
		if end < 0 || sp < 0 || n == len(lines) {
			return dst[:start], false
		}
		dst = append(dst, old[:sp+1]...)
		l := lines[n]
		v := vals[l.token]
		switch {
		case l.count:
			// AppendFamily stored uint64(v), where that is defined.
			if !(v >= 0 && v < 1<<64) {
				return dst[:start], false
			}
			if u := uint64(v); enc == EncodingOpenMetrics {
				dst = strconv.AppendUint(dst, u, 10)
			} else {
				dst = appendTextFloat(dst, float64(u))
			}
		case enc == EncodingOpenMetrics:
			dst = appendOpenMetricsFloat(dst, v)
		default:
			dst = appendTextFloat(dst, v)
		}
		dst = append(dst, '\n')
		old = old[end+1:]
		n++
	}
	if n != len(lines) {
		return dst[:start], false
	}
	return dst, true
}
