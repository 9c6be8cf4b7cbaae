package exposition

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
)

// errFallback is returned by textParser when a line uses syntax the fast
// parser leaves to expfmt (see textParser). It never leaves the package.
var errFallback = errors.New("text syntax left to expfmt")

// textParser decodes the text format 0.0.4 by slicing one string holding the
// whole body: names and label values are substrings of it (a body's strings
// share its memory), and the dto objects are carved out of a few arrays per
// body. It produces exactly the families expfmt's TextParser produces and
// rejects exactly what it rejects, and one thing more: a kept family whose
// HELP text is not valid UTF-8, which expfmt takes and Prometheus' own
// parsers refuse (decodeTextExpfmt refuses it too). The differential fuzz
// test FuzzTextParserMatchesExpfmt holds it to that.
//
// Fast path: lines whose names are unquoted and whose label values hold no
// backslash are sliced, never copied. On the 74-sample batch-job payload it
// takes 104 allocations and 37 KB against expfmt's 2,408 and 84 KB, and
// 3.3-4.8x less CPU time (measured on the loaded 2-core build machine; see
// BenchmarkDecodeText, which now also pays for a fresh body buffer and
// parser per decode: 114 allocations, 48 KB); rewound between pushes
// (Decoded.Release), 3 allocations, 136 B and 23 us instead of 41 us
// (BenchmarkDecodePooledText).
// Slow path: a label value or HELP text
// with escapes is unescaped into a new string. Fallback: a quoted (UTF-8)
// metric or label name, or a line that starts with '{', makes parse return
// errFallback, and the whole body goes to expfmt; those bodies are rare
// (UTF-8 names are opt-in) and the quoting rules are intricate, so copying
// them here would only add risk.
//
// A textParser is reused through Rewind; it must not be used concurrently.
type textParser struct {
	utf8Names bool
	maxSeries int

	body      string
	line      int    // number of the line being parsed, from 1
	lineText  string // the line being parsed, without its LF
	lineOff   int    // where lineText starts in body
	linesLeft int    // LFs after the current line: a bound on the samples left
	series    int

	families map[string]*textFamily
	order    []*textFamily
	// lastName, lastFamily and lastRole are the previous sample line's
	// name and what family returned for it; lastFamily is nil when unset.
	lastName   string
	lastFamily *textFamily
	lastRole   sampleRole
	labels     []textLabel // labels of the current line
	// values holds every sample value of the body, in body order: where
	// its token is and where the parser stored it (TextTemplate).
	values []valueRef
	out    []*dto.MetricFamily
	seed   maphash.Seed

	fams       arena[textFamily]
	metrics    arena[dto.Metric]
	labelPairs arena[labelBox]
	labelPtrs  arena[*dto.LabelPair]
	counters   arena[counterBox]
	gauges     arena[gaugeBox]
	untypeds   arena[untypedBox]
	summaries  arena[dto.Summary]
	quantiles  arena[quantileBox]
	histograms arena[dto.Histogram]
	buckets    arena[bucketBox]
	floats     arena[float64]
	uints      arena[uint64]
	timestamps arena[int64]
}

// textFamily is a family being assembled, with the storage its pointer
// fields point into.
type textFamily struct {
	mf   dto.MetricFamily
	name string
	help string
	typ  dto.MetricType
	// helpErr is set when the HELP text is not valid UTF-8: the family is
	// refused if it is kept, while a HELP line of a family without samples
	// is dropped with it, as expfmt drops the family, so that both parsers
	// refuse the same bodies.
	helpErr error
	// bySignature finds the metric of a summary or histogram from the
	// labels of one of its lines (all but quantile or le).
	bySignature map[uint64]*dto.Metric
}

// textLabel is one label of the line being parsed; special marks the
// quantile label of a summary or the le label of a histogram.
type textLabel struct {
	name, value string
	special     bool
}

// newTextParser returns a parser with empty buffers.
func newTextParser() *textParser {
	return &textParser{families: map[string]*textFamily{}, seed: maphash.MakeSeed()}
}

// Rewind prepares p for a new body and reuses the memory of the previous
// one. The caller must no longer use the families parse returned, nor any
// string of the body.
func (p *textParser) Rewind() {
	p.forget()
	clear(p.out[:cap(p.out)])
	p.out = p.out[:0]
	p.fams.rewind((*textFamily).recycle)
	p.metrics.rewind(nil)
	p.labelPairs.rewind(nil)
	p.labelPtrs.rewind(nil)
	p.counters.rewind(nil)
	p.gauges.rewind(nil)
	p.untypeds.rewind(nil)
	p.summaries.rewind(recycleSummary)
	p.quantiles.rewind(nil)
	p.histograms.rewind(recycleHistogram)
	p.buckets.rewind(nil)
	p.floats.rewind(nil)
	p.uints.rewind(nil)
	p.timestamps.rewind(nil)
}

// forget drops p's references to the previous body and its families.
func (p *textParser) forget() {
	p.utf8Names, p.maxSeries = false, 0
	p.body, p.lineText = "", ""
	p.line, p.lineOff, p.linesLeft, p.series = 0, 0, 0, 0
	clear(p.families)
	p.lastName, p.lastFamily = "", nil
	clear(p.order)
	p.order = p.order[:0]
	clear(p.labels[:cap(p.labels)])
	p.labels = p.labels[:0]
	clear(p.values)
	p.values = p.values[:0]
}

// pooledObjects returns how many objects p's arenas keep for reuse, a
// measure of the memory a pooled parser pins.
func (p *textParser) pooledObjects() int {
	return p.metrics.capacity() + p.labelPairs.capacity() + p.labelPtrs.capacity() + p.buckets.capacity() + cap(p.values)
}

// recycle zeroes f but keeps the capacity of its metric slice and its
// signature map, which the next body's family of the same size reuses.
func (f *textFamily) recycle() {
	metrics, sigs := f.mf.Metric, f.bySignature
	clear(metrics)
	clear(sigs)
	*f = textFamily{}
	f.mf.Metric, f.bySignature = metrics[:0], sigs
}

// recycleSummary zeroes s but keeps the capacity of its quantile slice.
func recycleSummary(s *dto.Summary) {
	q := s.Quantile
	clear(q)
	*s = dto.Summary{}
	s.Quantile = q[:0]
}

// recycleHistogram zeroes h but keeps the capacity of its bucket slice.
func recycleHistogram(h *dto.Histogram) {
	b := h.Bucket
	clear(b)
	*h = dto.Histogram{}
	h.Bucket = b[:0]
}

// parse decodes body and returns its non-empty families in body order of
// first appearance. It returns errFallback when the body needs expfmt.
func (p *textParser) parse(body string) ([]*dto.MetricFamily, error) {
	p.body = body
	p.lastFamily = nil
	p.linesLeft = strings.Count(body, "\n")
	rest := body
	for len(rest) > 0 {
		p.line++
		end := strings.IndexByte(rest, '\n')
		if end < 0 {
			// expfmt needs an LF to end every line; only blanks may
			// follow the last one.
			p.lineText = rest
			if skipBlank(rest, 0) == len(rest) {
				break
			}
			return nil, p.errorf("unexpected end of input stream")
		}
		p.lineText = rest[:end]
		p.lineOff = len(body) - len(rest)
		rest = rest[end+1:]
		p.linesLeft--
		if err := p.parseLine(p.lineText); err != nil {
			return nil, err
		}
	}
	families := p.out[:0]
	for _, f := range p.order {
		if len(f.mf.Metric) == 0 {
			continue
		}
		if f.helpErr != nil {
			return nil, f.helpErr
		}
		if f.typ == dto.MetricType_HISTOGRAM || f.typ == dto.MetricType_GAUGE_HISTOGRAM {
			for _, m := range f.mf.Metric {
				normalizeHistogram(m.Histogram)
			}
		}
		families = append(families, &f.mf)
	}
	p.out = families
	return families, nil
}

// textError is a syntax error in a text body: the message, the line number
// and the line itself.
type textError struct {
	line int
	text string
	msg  string
}

// maxQuotedLine bounds the part of an offending line an error quotes.
const maxQuotedLine = 80

// Error implements error. The first part matches expfmt's messages.
func (e *textError) Error() string {
	text := e.text
	if len(text) > maxQuotedLine {
		text = text[:maxQuotedLine] + "…"
	}
	return fmt.Sprintf("text format parsing error in line %d: %s, in %q", e.line, e.msg, text)
}

// errorf returns a textError for the current line.
func (p *textParser) errorf(format string, args ...any) error {
	// The line text is cloned: the error may outlive the body.
	return &textError{line: p.line, text: strings.Clone(p.lineText), msg: fmt.Sprintf(format, args...)}
}

// parseLine parses one line without its LF.
func (p *textParser) parseLine(line string) error {
	i := skipBlank(line, 0)
	if i == len(line) {
		return nil
	}
	switch line[i] {
	case '#':
		return p.parseComment(line, i+1)
	case '{':
		return errFallback // {"name", ...}: a quoted metric name.
	}
	return p.parseSample(line, i)
}

// parseComment parses a comment line from just after its '#'. Only HELP and
// TYPE lines that name a metric mean anything.
func (p *textParser) parseComment(line string, i int) error {
	i = skipBlank(line, i)
	j := i
	for j < len(line) && !isBlank(line[j]) {
		j++
	}
	if j == len(line) {
		return nil
	}
	keyword := line[i:j]
	if keyword != "HELP" && keyword != "TYPE" {
		return nil
	}
	i = skipBlank(line, j)
	name, j, err := scanMetricName(line, i)
	if err != nil {
		return err
	}
	if j == len(line) {
		return nil
	}
	if name == "" || !isBlank(line[j]) {
		return p.errorf("invalid metric name in comment")
	}
	// A HELP or TYPE line may change which family a sample name belongs
	// to; parseSample looks it up afresh.
	p.lastFamily = nil
	f, _ := p.family(name)
	i = skipBlank(line, j)
	if i == len(line) {
		return nil
	}
	if keyword == "HELP" {
		if f.mf.Help != nil {
			return p.errorf("second HELP line for metric name %q", f.name)
		}
		help, err := p.unescape(line[i:])
		if err != nil {
			return err
		}
		if !utf8.ValidString(help) {
			// Prometheus refuses a whole scrape with such a line.
			f.helpErr = p.errorf("%s", errHelpNotUTF8(f.name))
		}
		// Not a copy: the store interns the HELP texts it keeps.
		f.help = help
		f.mf.Help = &f.help
		return nil
	}
	if f.mf.Type != nil {
		return p.errorf("second TYPE line for metric name %q, or TYPE reported after samples", f.name)
	}
	// Like expfmt: any case, and the OpenMetrics spelling gaugehistogram.
	word := line[i:]
	typ, ok := metricType(dropBackslashes(word))
	if !ok {
		return p.errorf("unknown metric type %q", word)
	}
	f.setType(typ)
	return nil
}

// metricTypes are the TYPE words, upper-case, and their types.
var metricTypes = [...]struct {
	word string
	typ  dto.MetricType
}{
	{"COUNTER", dto.MetricType_COUNTER},
	{"GAUGE", dto.MetricType_GAUGE},
	{"HISTOGRAM", dto.MetricType_HISTOGRAM},
	{"SUMMARY", dto.MetricType_SUMMARY},
	{"UNTYPED", dto.MetricType_UNTYPED},
	{"GAUGE_HISTOGRAM", dto.MetricType_GAUGE_HISTOGRAM},
	{"GAUGEHISTOGRAM", dto.MetricType_GAUGE_HISTOGRAM},
}

// dropBackslashes returns word without its backslashes. expfmt reads the rest
// of a TYPE line without escape sequences and drops every backslash in it, so
// "coun\ter" there names a counter; the error for an unknown word still
// quotes the word as written.
func dropBackslashes(word string) string {
	if strings.IndexByte(word, '\\') < 0 {
		return word
	}
	return strings.ReplaceAll(word, "\\", "")
}

// metricType maps a TYPE word to its type as expfmt does: the upper-cased
// word names a dto.MetricType, or is the OpenMetrics spelling
// GAUGEHISTOGRAM. An ASCII word is compared without upper-casing it
// (strings.ToUpper allocated on every TYPE line); any other word is
// upper-cased as expfmt does, since Unicode case mapping (ı to I) differs
// from case folding.
func metricType(word string) (dto.MetricType, bool) {
	ascii := true
	for i := 0; i < len(word); i++ {
		if word[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if !ascii {
		word = strings.ToUpper(word)
	}
	for _, t := range metricTypes {
		if ascii && strings.EqualFold(word, t.word) || word == t.word {
			return t.typ, true
		}
	}
	return 0, false
}

// sampleRole tells a line of a summary or histogram family apart: its
// _count, its _sum, or anything else (a quantile or bucket line).
type sampleRole int

const (
	roleOther sampleRole = iota
	roleCount
	roleSum
)

// family finds the family a name belongs to, creating it if needed, as
// expfmt does: the name itself, else the summary or histogram it is the
// _count, _sum or _bucket line of.
func (p *textParser) family(name string) (*textFamily, sampleRole) {
	if f := p.families[name]; f != nil {
		return f, roleOther
	}
	role := roleOther
	base := name
	switch {
	case isSuffixed(name, "_count"):
		role, base = roleCount, name[:len(name)-6]
	case isSuffixed(name, "_sum"):
		role, base = roleSum, name[:len(name)-4]
	}
	if f := p.families[base]; f != nil && f.typ == dto.MetricType_SUMMARY && f.mf.Type != nil {
		return f, role
	}
	if role == roleOther && isSuffixed(name, "_bucket") {
		base = name[:len(name)-7]
	}
	if f := p.families[base]; f != nil && f.mf.Type != nil &&
		(f.typ == dto.MetricType_HISTOGRAM || f.typ == dto.MetricType_GAUGE_HISTOGRAM) {
		return f, role
	}
	// Not a copy: the store interns the names it keeps.
	f := p.fams.next(p.linesLeft + 1)
	f.name = name
	f.mf.Name = &f.name
	p.families[f.name] = f
	p.order = append(p.order, f)
	return f, roleOther
}

// setType sets the family's type.
func (f *textFamily) setType(typ dto.MetricType) {
	f.typ = typ
	f.mf.Type = &f.typ
}

// isSuffixed reports whether name is longer than suffix and ends in it.
func isSuffixed(name, suffix string) bool {
	return len(name) > len(suffix) && name[len(name)-len(suffix):] == suffix
}

// parseSample parses a sample line from the first byte of its name.
func (p *textParser) parseSample(line string, i int) error {
	name, i, err := scanMetricName(line, i)
	if err != nil {
		return err
	}
	if name == "" {
		return p.errorf("invalid metric name")
	}
	// Consecutive lines of a histogram or summary repeat their name: the
	// family found for the previous line is reused, which saves the map
	// lookups family makes (up to three for a _bucket line).
	f, role := p.lastFamily, p.lastRole
	if f == nil || name != p.lastName {
		f, role = p.family(name)
		p.lastName, p.lastFamily, p.lastRole = name, f, role
	}
	if f.mf.Type == nil {
		f.setType(dto.MetricType_UNTYPED)
	}
	isSummary := f.typ == dto.MetricType_SUMMARY
	isHistogram := f.typ == dto.MetricType_HISTOGRAM || f.typ == dto.MetricType_GAUGE_HISTOGRAM
	special := ""
	if isSummary {
		special = model.QuantileLabel
	} else if isHistogram {
		special = model.BucketLabel
	}
	// quantile or le of this line; NaN when absent, as in expfmt.
	bound := math.NaN()

	p.labels = p.labels[:0]
	i = skipBlank(line, i)
	if i < len(line) && line[i] == '{' {
		if i, err = p.parseLabels(line, i+1, f, special, &bound); err != nil {
			return err
		}
	}

	var m *dto.Metric
	if isSummary || isHistogram {
		sig := p.signature()
		if m = f.bySignature[sig]; m != nil && !sameLabels(m.Label, p.labels) {
			return errFallback // A hash collision: let expfmt decide.
		}
		if m == nil {
			if err := p.countSeries(); err != nil {
				return err
			}
			m = p.newMetric()
			if f.bySignature == nil {
				f.bySignature = map[uint64]*dto.Metric{}
			}
			f.bySignature[sig] = m
			f.mf.Metric = append(f.mf.Metric, m)
		}
	} else {
		if err := p.countSeries(); err != nil {
			return err
		}
		m = p.newMetric()
		f.mf.Metric = append(f.mf.Metric, m)
	}

	j := i
	for j < len(line) && !isBlank(line[j]) {
		j++
	}
	token := line[i:j]
	value, err := parseTextFloat(token)
	if err != nil {
		return p.errorf("expected float as value, got %q", token)
	}
	ref, err := p.setValue(f, m, role, bound, value)
	if err != nil {
		return err
	}
	ref.start, ref.end = p.lineOff+i, p.lineOff+j
	p.values = append(p.values, ref)
	if j == len(line) {
		return nil
	}

	i = skipBlank(line, j)
	j = i
	for j < len(line) && !isBlank(line[j]) {
		j++
	}
	token = line[i:j]
	ts, err := strconv.ParseInt(token, 10, 64)
	if err != nil {
		return p.errorf("expected integer as timestamp, got %q", token)
	}
	if j != len(line) {
		return p.errorf("spurious string after timestamp: %q", line[j:])
	}
	tp := p.timestamps.next(p.linesLeft + 1)
	*tp = ts
	m.TimestampMs = tp
	return nil
}

// parseLabels parses a label set from just after its '{' into p.labels and
// returns the index of the value after the closing '}'. The label named
// special (quantile for summaries, le for histograms) goes to bound instead.
func (p *textParser) parseLabels(line string, i int, f *textFamily, special string, bound *float64) (int, error) {
	for {
		i = skipBlank(line, i)
		if i < len(line) && line[i] == '}' {
			return skipBlank(line, i+1), nil
		}
		name, j, err := scanLabelName(line, i)
		if err != nil {
			return 0, err
		}
		if name == "" {
			return 0, p.errorf("invalid label name for metric %q", f.name)
		}
		i = skipBlank(line, j)
		if i == len(line) || line[i] != '=' {
			return 0, p.errorf("expected '=' after label name, found %q", byteAt(line, i))
		}
		if name == model.MetricNameLabel {
			return 0, p.errorf("label name %q is reserved", model.MetricNameLabel)
		}
		isSpecial := special != "" && name == special
		if !isSpecial {
			for _, l := range p.labels {
				if !l.special && l.name == name {
					return 0, p.errorf("duplicate label names for metric %q", f.name)
				}
			}
		}

		i = skipBlank(line, i+1)
		if i == len(line) || line[i] != '"' {
			return 0, p.errorf("expected '\"' at start of label value, found %q", byteAt(line, i))
		}
		value, j, err := p.scanLabelValue(line, i+1)
		if err != nil {
			return 0, err
		}
		if !utf8.ValidString(value) {
			return 0, p.errorf("invalid label value %q", value)
		}
		if isSpecial {
			if *bound, err = parseTextFloat(value); err != nil {
				return 0, p.errorf("expected float as value for '%s' label, got %q", special, value)
			}
		} else {
			p.labels = append(p.labels, textLabel{name: name, value: value})
		}

		i = skipBlank(line, j)
		switch byteAt(line, i) {
		case ',':
			i++
		case '}':
			return skipBlank(line, i+1), nil
		default:
			return 0, p.errorf("unexpected end of label value %q", value)
		}
	}
}
