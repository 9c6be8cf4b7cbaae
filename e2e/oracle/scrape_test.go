package oracle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// sample is one series Prometheus ingests from a scrape, with its value.
type sample struct {
	ls labels.Labels
	// id is the series identity (identity(ls)).
	id string
	// family and typ are the metric family the sample came in.
	family string
	typ    model.MetricType
	v      float64
	h      *histogram.Histogram
	fh     *histogram.FloatHistogram
}

// valueString renders the sample's value for comparisons and messages:
// NaN equals NaN, histograms compare by their buckets, count and sum.
func (s sample) valueString() string {
	switch {
	case s.h != nil:
		return fmt.Sprintf("native %s hint=%d", s.h.String(), s.h.CounterResetHint)
	case s.fh != nil:
		return fmt.Sprintf("native float %s hint=%d", s.fh.String(), s.fh.CounterResetHint)
	case math.IsNaN(s.v):
		return "NaN"
	}
	return strconv.FormatFloat(s.v, 'g', -1, 64)
}

// pushed reports whether the sample belongs to a pushed group: every pushed
// series has a job label; the gateway's own metrics have none.
func (s sample) pushed() bool {
	return s.ls.Get("job") != ""
}

// view is how a format shows families: the encoding (text, openmetrics,
// protobuf) and the name escaping.
type view struct {
	enc    string
	scheme model.EscapingScheme
}

func (v view) String() string { return v.enc + "/" + v.scheme.String() }

// scrapeResult is one checked scrape.
type scrapeResult struct {
	v          variant
	status     int
	header     string
	body       []byte
	view       view
	violations []violation
	// usable is set when the answer has a valid Content-Type and parsed
	// completely, so that its samples mean something.
	usable  bool
	samples []sample
}

// pushedSamples returns the samples of pushed groups.
func (r *scrapeResult) pushedSamples() []sample {
	var out []sample
	for _, s := range r.samples {
		if s.pushed() {
			out = append(out, s)
		}
	}
	return out
}

// scrape GETs /metrics in variant v and runs every check that needs only
// this one answer.
func scrape(ctx context.Context, baseURL string, v variant) (*scrapeResult, error) {
	var header []string
	if v.accept != "" {
		header = append(header, "Accept", v.accept)
	}
	if v.gzip {
		header = append(header, "Accept-Encoding", "gzip")
	}
	resp, err := send(ctx, "GET", baseURL+"/metrics", nil, header...)
	if err != nil {
		return nil, err
	}
	r := &scrapeResult{v: v, status: resp.status, header: resp.header.Get("Content-Type"), body: resp.body}
	r.analyze(resp)
	return r, nil
}

// fail records a violation of this scrape.
func (r *scrapeResult) fail(check, hint, format string, args ...any) {
	r.violations = append(r.violations, violation{
		check:   check,
		hint:    hint,
		enc:     r.view.enc,
		escaped: r.view.enc != "" && r.view.scheme != model.NoEscaping,
		variant: r.v.name,
		detail:  fmt.Sprintf(format, args...),
	})
}

// analyze runs the checks of a single answer.
func (r *scrapeResult) analyze(resp response) {
	if resp.status != 200 {
		r.fail("scrape status", "", "status %d: %s", resp.status, clip(resp.body, 300))
		return
	}
	switch enc := resp.header.Get("Content-Encoding"); {
	case enc == "gzip" && r.v.gzip:
		b, err := gunzip(resp.body)
		if err != nil {
			r.fail("gzip body", "", "the gzip answer does not decompress completely: %v (%d bytes)", err, len(resp.body))
			return
		}
		r.body = b
	case enc != "" && enc != "identity":
		r.fail("content encoding", "", "Content-Encoding %q without Accept-Encoding: gzip", enc)
		return
	}
	if !r.checkContentType() {
		return
	}
	r.parse()
}

// checkContentType requires a Content-Type that the variant's Accept header
// allows, with its version, charset and escaping, and sets r.view.
func (r *scrapeResult) checkContentType() bool {
	mt, params, err := mime.ParseMediaType(r.header)
	if err != nil {
		r.fail("content type", "", "Content-Type %q does not parse: %v", r.header, err)
		return false
	}
	scheme, err := model.ToEscapingScheme(params[model.EscapingKey])
	if params[model.EscapingKey] == "" {
		err = errors.New("no escaping parameter")
	}
	if err != nil {
		r.fail("content type", "", "Content-Type %q: %v", r.header, err)
		return false
	}
	for _, s := range r.v.allowed {
		if s.mediaType != mt || s.version != params["version"] {
			continue
		}
		found := false
		for _, e := range s.escapings {
			found = found || e == scheme
		}
		if !found {
			r.fail("content type", "", "Content-Type %q: escaping %s, but Accept %q asks for %v", r.header, scheme, r.v.accept, s.escapings)
			return false
		}
		switch mt {
		case mtProtobuf:
			if params["proto"] != "io.prometheus.client.MetricFamily" || params["encoding"] != "delimited" {
				r.fail("content type", "", "Content-Type %q is not delimited MetricFamily protobuf", r.header)
				return false
			}
			r.view = view{"protobuf", scheme}
		case mtOpenMetrics:
			r.view = view{"openmetrics", scheme}
		default:
			r.view = view{"text", scheme}
		}
		if mt != mtProtobuf && params["charset"] != "utf-8" {
			r.fail("content type", "", "Content-Type %q: charset should be utf-8", r.header)
			return false
		}
		return true
	}
	r.fail("content type", "", "Content-Type %q is not one that Accept %q allows", r.header, r.v.accept)
	return false
}

// parse reads the body with Prometheus 3's parser for its Content-Type and
// with expfmt, and checks what Prometheus would object to: a parse error,
// a name the declared escaping does not allow, a label name twice in one
// series, a series twice, a family twice, OpenMetrics without # EOF.
func (r *scrapeResult) parse() {
	samples, types, err := parseSamples(r.body, r.header, r.view.enc == "protobuf")
	if err != nil {
		r.fail("Prometheus 3 parser (textparse)", "", "%v", err)
		return
	}
	r.samples = samples
	ok := true
	if err := r.parseExpfmt(); err != nil {
		r.fail("expfmt parser", "", "%v", err)
		ok = false
	}
	if r.view.enc == "openmetrics" && !bytes.HasSuffix(r.body, []byte("# EOF\n")) && !bytes.HasSuffix(r.body, []byte("# EOF")) {
		r.fail("OpenMetrics # EOF", "", "the body does not end with # EOF: …%q", tail(r.body, 80))
		ok = false
	}
	if r.view.enc != "protobuf" {
		for name, n := range types {
			if n > 1 {
				r.fail("family twice", familyHint(name), "%d TYPE lines for %s", n, quoteName(name, true))
			}
		}
	}
	seen := map[string]int{}
	byID := map[string]sample{}
	for _, s := range samples {
		seen[s.id]++
		byID[s.id] = s
		names := map[string]bool{}
		dupLabel := ""
		s.ls.Range(func(l labels.Label) {
			if names[l.Name] {
				dupLabel = l.Name
			}
			names[l.Name] = true
			if r.view.scheme != model.NoEscaping {
				if l.Name == model.MetricNameLabel && !legacyMetricName(l.Value) {
					r.fail("unescaped name", "metric", "metric name %q in a scrape with escaping=%s", l.Value, r.view.scheme)
					ok = false
				}
				if l.Name != model.MetricNameLabel && !legacyLabelName(l.Name) {
					r.fail("unescaped name", "label", "label name %q in a scrape with escaping=%s", l.Name, r.view.scheme)
					ok = false
				}
			}
		})
		if dupLabel != "" {
			r.fail("label twice", "", "series %s has label %s twice", s.ls.String(), dupLabel)
		}
	}
	var dups []string
	for id, n := range seen {
		if n > 1 {
			dups = append(dups, id)
		}
	}
	sort.Strings(dups)
	for _, id := range dups {
		r.fail("series twice", seriesHint(byID[id]), "%d samples of series %s", seen[id], id)
	}
	// Repeated series and families still say what each series holds; a
	// body that does not parse or shows names the scraper cannot read
	// does not.
	r.usable = ok
}

// familyHint names the kind of a family that appears twice.
func familyHint(name string) string {
	if isOwnName(name) {
		return "a gateway metric"
	}
	return ""
}

// seriesHint classifies a repeated series by its name and labels.
func seriesHint(s sample) string {
	switch {
	case timeNames[s.ls.Get(model.MetricNameLabel)]:
		return "one group twice"
	case s.ls.Has(model.BucketLabel):
		return "a bucket"
	case s.ls.Has(model.QuantileLabel):
		return "a quantile"
	}
	return ""
}

// isOwnName reports whether name has a prefix of the gateway's own metrics.
func isOwnName(name string) bool {
	for _, p := range []string{"go_", "process_", "pushgateway_", "pushgate_", "promhttp_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// parseExpfmt parses the body with prometheus/common: the text parser for
// the text formats (with legacy names unless escaping=allow-utf-8), the
// delimited decoder for protobuf. expfmt has no OpenMetrics parser.
func (r *scrapeResult) parseExpfmt() error {
	scheme := model.LegacyValidation
	if r.view.scheme == model.NoEscaping {
		scheme = model.UTF8Validation
	}
	switch r.view.enc {
	case "text":
		p := expfmt.NewTextParser(scheme)
		_, err := p.TextToMetricFamilies(bytes.NewReader(r.body))
		return err
	case "protobuf":
		_, err := decodeProtobuf(r.body, r.header)
		return err
	}
	return nil
}

// decodeProtobuf decodes a delimited protobuf body with expfmt's decoder
// for its Content-Type.
func decodeProtobuf(body []byte, contentType string) ([]*dto.MetricFamily, error) {
	dec := expfmt.NewDecoder(bytes.NewReader(body), expfmt.Format(contentType))
	var out []*dto.MetricFamily
	for i := 0; ; i++ {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("message %d: %w", i, err)
		}
		out = append(out, mf)
	}
}

// parseSamples parses a scrape body with textparse, as Prometheus 3 does
// for the Content-Type, and returns every sample and how often each
// family's TYPE was seen. Native histograms are kept native when native is
// set (a scrape with native histograms on).
func parseSamples(body []byte, contentType string, native bool) ([]sample, map[string]int, error) {
	p, err := textparse.New(body, contentType, labels.NewSymbolTable(), textparse.ParserOptions{IgnoreNativeHistograms: !native})
	if err != nil {
		return nil, nil, fmt.Errorf("textparse.New(%q): %w", contentType, err)
	}
	types := map[string]int{}
	var out []sample
	var family string
	var typ model.MetricType
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			return out, types, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%w (after %d samples%s)", err, len(out), lastSeries(out))
		}
		switch e {
		case textparse.EntryType:
			name, t := p.Type()
			family, typ = string(name), t
			types[family]++
		case textparse.EntrySeries:
			_, _, v := p.Series()
			var ls labels.Labels
			p.Labels(&ls)
			out = append(out, sample{ls: ls, id: identity(ls), family: family, typ: typ, v: v})
			if err := checkExemplars(p, ls); err != nil {
				return nil, nil, err
			}
		case textparse.EntryHistogram:
			_, _, h, fh := p.Histogram()
			var ls labels.Labels
			p.Labels(&ls)
			s := sample{ls: ls, id: identity(ls), family: family, typ: typ}
			if h != nil {
				s.h = h.Copy()
			}
			if fh != nil {
				s.fh = fh.Copy()
			}
			out = append(out, s)
			if err := checkExemplars(p, ls); err != nil {
				return nil, nil, err
			}
		}
	}
}

// checkExemplars fails on an exemplar of the current entry that Prometheus
// would not store: labels that are not a valid label set, or longer
// together than OpenMetrics allows.
func checkExemplars(p textparse.Parser, series labels.Labels) error {
	var ex exemplar.Exemplar
	for p.Exemplar(&ex) {
		n := 0
		ex.Labels.Range(func(l labels.Label) { n += utf8.RuneCountInString(l.Name) + utf8.RuneCountInString(l.Value) })
		if !ex.Labels.IsValid(model.UTF8Validation) || ex.Labels.Has("") || n > exemplar.ExemplarMaxLabelSetLength {
			return fmt.Errorf("series %s carries an exemplar Prometheus would not store: %s (%d code points)", series, ex.Labels, n)
		}
		ex = exemplar.Exemplar{}
	}
	return nil
}

// lastSeries names the last parsed series, to place a parse error.
func lastSeries(s []sample) string {
	if len(s) == 0 {
		return ""
	}
	return ", the last " + s[len(s)-1].id
}

// clip shortens b for a message.
func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// tail returns the last n bytes of b.
func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
