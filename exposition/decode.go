package exposition

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// DecodeOptions configures Decode.
type DecodeOptions struct {
	// UTF8Names accepts UTF-8 metric and label names (the quoted text
	// syntax, and any valid UTF-8 name in protobuf). Otherwise only legacy
	// names are accepted, in protobuf bodies too: unlike the reference
	// Pushgateway, protobuf does not bypass the check.
	UTF8Names bool
	// MaxBytes limits the (already decompressed) body; 0 means no limit.
	// A longer body makes Decode return an error wrapping ErrTooLarge.
	MaxBytes int64
	// MaxSeries limits the series (dto Metrics: a whole histogram or
	// summary counts as one) a push may hold; 0 means no limit. Decoding
	// stops at the first series over the limit, so an oversized push is
	// never built, and Decode returns an error wrapping ErrTooManySeries.
	MaxSeries int
}

// ErrTooLarge is wrapped by the error Decode returns for a body longer than
// DecodeOptions.MaxBytes.
var ErrTooLarge = errors.New("body too large")

// IsProtobuf reports whether a push Content-Type selects the delimited
// protobuf format: media type application/vnd.google.protobuf with
// proto=io.prometheus.client.MetricFamily and encoding=delimited, in any
// parameter order and spacing, other parameters tolerated. Anything else,
// including an empty or unparsable value, selects the text format 0.0.4.
func IsProtobuf(contentType string) bool {
	if contentType == string(expfmt.FmtProtoDelim) {
		// What client_golang and most other clients send: parsing it cost
		// 3 of the 7 allocations of a pooled protobuf decode.
		return true
	}
	if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(contentType)), expfmt.ProtoType) {
		return false // Fast path: no map allocation for text pushes.
	}
	mediaType, params, err := mime.ParseMediaType(contentType)
	return err == nil &&
		mediaType == expfmt.ProtoType &&
		params["proto"] == expfmt.ProtoProtocol &&
		params["encoding"] == "delimited"
}

// Decode reads a whole push body in the format its Content-Type selects (see
// IsProtobuf) and returns its metric families sorted by name.
//
// Text bodies are parsed as expfmt's text format 0.0.4 parser does (by
// textParser, which falls back to expfmt for quoted names): lines end in
// LF (the last one too), families with HELP or TYPE but no samples are
// dropped, and "# EOF" and other comments are ignored. Protobuf bodies are
// varint-delimited MetricFamily messages; when a name repeats, the last
// message wins, as in the reference Pushgateway, and families without
// metrics are dropped. Every returned family has its Type set, and each of
// its metrics carries the value field of that type.
//
// The body is read into a pooled buffer and parsed without a copy, into dto
// objects carved out of pooled arenas: the metric names, label names and
// values and HELP texts are substrings of the buffer (unless they held
// escapes, or a protobuf message was left to proto.Unmarshal). A caller
// that calls Decoded.Release once it no longer needs the families lets the
// next push reuse all of that, which on the 74-sample batch-job payload
// saves nearly every allocation (BenchmarkDecodePooledText,
// BenchmarkDecodePooledProtobuf); a caller that never calls it keeps the
// memory for good, and the garbage collector takes it with the families.
// On an error nothing is borrowed and the error's text is a copy.
//
// Errors are one line and name the offending part, for example
// `text format parsing error in line 3: expected float as value, got "x"`
// or `invalid metric name "a.b"`.
func Decode(r io.Reader, contentType string, opts DecodeOptions) (*Decoded, error) {
	b, err := Read(r, contentType, opts)
	if err != nil {
		return nil, err
	}
	return b.Decode()
}

// Body is a push body not yet decoded: a text body read into pooled
// memory, or a protobuf body still to be read.
type Body struct {
	text  *textDecoder
	r     io.Reader
	opts  DecodeOptions
	proto bool
}

// Read reads a text body whole, so that it can be looked at before it is
// parsed (Text), and prepares a protobuf body to be decoded as it is
// read. Its errors are those of Decode's reading. A Body is decoded
// (Decode) or released (Release), once.
//
// A Body is returned by value, so that reading one allocates nothing.
func Read(r io.Reader, contentType string, opts DecodeOptions) (Body, error) {
	if IsProtobuf(contentType) {
		return Body{r: r, opts: opts, proto: true}, nil
	}
	d := textDecoders.Get().(*textDecoder)
	d.buf.Reset()
	if err := readBody(&d.buf, r, opts.MaxBytes); err != nil {
		d.put()
		return Body{}, fmt.Errorf("read body: %w", err)
	}
	return Body{text: d, opts: opts}, nil
}

// Text returns a text body as read, nil for a protobuf body. It is valid
// until b is decoded or released.
func (b *Body) Text() []byte {
	if b.text == nil {
		return nil
	}
	return b.text.buf.Bytes()
}

// Decode decodes the body as Decode does.
func (b *Body) Decode() (*Decoded, error) {
	if b.proto {
		return decodeProtobuf(b.r, b.opts)
	}
	d := b.text
	if d == nil {
		return nil, errors.New("decode body: already decoded or released")
	}
	b.text = nil
	return decodeText(d, b.opts)
}

// Release gives back the memory of a body that is not decoded.
func (b *Body) Release() {
	if b.text != nil {
		b.text.put()
		b.text = nil
	}
}

// Decoded is a decoded push body whose memory is borrowed from a pool: the
// families, their dto objects and the label strings of a text body live in
// buffers that later pushes reuse once Release is called.
type Decoded struct {
	// Families holds the body's metric families sorted by name. The
	// caller may modify them until Release.
	Families []*dto.MetricFamily
	// KnownFields reports that no message of Families holds unknown
	// protobuf fields: true for text bodies, and for protobuf bodies read
	// without handing a message to proto.Unmarshal. Encoding with
	// Format.WithKnownFields then skips looking for them.
	KnownFields bool
	// text is a text body as read, and values where the parser found and
	// put each of its sample values (BuildTextTemplate); both nil for a
	// protobuf body or one the expfmt fallback parsed.
	text   []byte
	values []valueRef
	// release hands the memory back; nil once released, or when nothing
	// is pooled.
	release func()
}

// Text returns the text body as read, for a text body the fast parser
// parsed (nil otherwise). Like the families, it is borrowed until Release.
func (d *Decoded) Text() []byte { return d.text }

// Release hands the memory of d back for reuse and sets d.Families to nil.
// Afterwards nothing that d held may be used: no family, metric, label
// pair, nor any string read from them (names, label names and values, HELP
// texts), because the next push overwrites them. Whatever outlives the push
// must be copied before: the store keeps only bytes it encodes itself and
// names it interns, and builds its error messages as new strings. A push
// calls it once it is done with the families, including when its own
// processing of them failed.
// Calling Release again, or on a nil *Decoded, does nothing.
func (d *Decoded) Release() {
	if d == nil {
		return
	}
	d.Families, d.text, d.values = nil, nil, nil
	if release := d.release; release != nil {
		d.release = nil
		release()
	}
}

// textDecoder is the memory one text body is decoded into: the body and
// the parser with its arenas. It goes back to textDecoders when the
// families are released.
type textDecoder struct {
	buf    bytes.Buffer
	parser *textParser
}

// textDecoders holds text decoders between pushes.
var textDecoders = sync.Pool{New: func() any { return &textDecoder{parser: newTextParser()} }}

// maxPooledFamilies bounds the family map a pooled parser keeps: a parser
// that has seen a larger body is dropped rather than pinning its map.
const maxPooledFamilies = 4096

// maxPooledObjects bounds the dto objects (metrics, label pairs, buckets) a
// pooled parser keeps for reuse: the batch-job payload needs about 600, and
// 64k of them are about 4 MB, so a rare huge body does not pin its arenas
// in every pooled parser.
const maxPooledObjects = 64 << 10

// put returns d to the pool unless it grew past the bounds.
func (d *textDecoder) put() {
	if d.buf.Cap() > maxPooledBuffer {
		d.buf = bytes.Buffer{}
	}
	if cap(d.parser.order) > maxPooledFamilies || d.parser.pooledObjects() > maxPooledObjects {
		return
	}
	textDecoders.Put(d)
}

// decodeText parses a text format 0.0.4 body, read into d (Read), with
// textParser, or with expfmt when textParser leaves the body to it. The
// parsers validate metric and label names under the chosen scheme and
// label values as UTF-8.
//
// The parser slices the read buffer itself (through unsafe.String) and the
// families point into the parser's arenas; both go back to the pool on
// Release, which rewinds the arenas.
func decodeText(d *textDecoder, opts DecodeOptions) (*Decoded, error) {
	body := unsafe.String(unsafe.SliceData(d.buf.Bytes()), d.buf.Len())

	p := d.parser
	p.utf8Names, p.maxSeries = opts.UTF8Names, opts.MaxSeries
	families, err := p.parse(body)
	if err == nil {
		sortByName(families)
		return &Decoded{Families: families, KnownFields: true, text: d.buf.Bytes(), values: p.values, release: func() {
			p.Rewind()
			d.put()
		}}, nil
	}
	// Nothing is borrowed past this point: error texts are copies, and the
	// expfmt fallback copies every string it keeps.
	p.Rewind()
	if errors.Is(err, errFallback) {
		body = strings.Clone(body)
		d.put()
		families, err = decodeTextExpfmt(body, opts.UTF8Names, opts.MaxSeries)
		if err != nil {
			return nil, err
		}
		return &Decoded{Families: families, KnownFields: true}, nil
	}
	d.put()
	return nil, err
}

// readBody reads r to its end into buf, and is where DecodeOptions.MaxBytes
// is enforced: a body longer than maxBytes (0: no limit) is an error
// wrapping ErrTooLarge, and no more than maxBytes bytes are read into buf,
// also when a pooled buf is larger. The buffer grows by doubling but never
// past maxBytes: with bytes.Buffer.ReadFrom a body refused at the 64 MiB
// default grew the buffer to 128 MiB and the process peaked at 274 MiB
// (e2e/abuse_test.go, gzip bomb); capped, the refusal costs at most the
// limit plus the half-size buffer it grew from.
func readBody(buf *bytes.Buffer, r io.Reader, maxBytes int64) error {
	const minRead = 16 << 10
	for {
		if maxBytes > 0 && int64(buf.Len()) >= maxBytes {
			// The buffer holds maxBytes: one more byte decides between
			// a body of exactly the limit and a longer one.
			var one [1]byte
			n, err := r.Read(one[:])
			if n > 0 {
				return fmt.Errorf("body exceeds the limit of %d bytes: %w", maxBytes, ErrTooLarge)
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			continue
		}
		if buf.Available() == 0 {
			size := max(2*buf.Cap(), minRead)
			if maxBytes > 0 && int64(size) > maxBytes {
				size = int(maxBytes)
			}
			// An exact-size copy: bytes.Buffer.Grow may round up past
			// the limit.
			grown := bytes.NewBuffer(make([]byte, buf.Len(), size))
			copy(grown.Bytes(), buf.Bytes())
			*buf = *grown
		}
		free := buf.AvailableBuffer()[:buf.Available()]
		if maxBytes > 0 {
			free = free[:min(int64(len(free)), maxBytes-int64(buf.Len()))]
		}
		n, err := r.Read(free)
		buf.Write(free[:n])
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// decodeTextExpfmt is the slow path: expfmt's parser, for bodies that use
// quoted (UTF-8) names. It counts series only after parsing, so the limit
// does not spare building such a body; MaxBytes still bounds it. Like
// textParser, it refuses a kept family whose HELP text is not UTF-8.
func decodeTextExpfmt(body string, utf8Names bool, maxSeries int) ([]*dto.MetricFamily, error) {
	scheme := model.LegacyValidation
	if utf8Names {
		scheme = model.UTF8Validation
	}
	p := expfmt.NewTextParser(scheme)
	byName, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		if msg := err.Error(); strings.Contains(msg, "\n") {
			// An escape of the LF ends up raw in expfmt's message; errors
			// are one line.
			return nil, errors.New(strings.ReplaceAll(msg, "\n", `\n`))
		}
		return nil, err
	}
	families := make([]*dto.MetricFamily, 0, len(byName))
	series := 0
	for _, mf := range byName {
		if mf.Type == nil {
			mf.Type = dto.MetricType_UNTYPED.Enum()
		}
		if series, err = countFamilySeries(series, len(mf.Metric), maxSeries); err != nil {
			return nil, err
		}
		families = append(families, mf)
	}
	sortByName(families)
	for _, mf := range families {
		// expfmt checks names and label values, but takes any HELP text.
		if !utf8.ValidString(mf.GetHelp()) {
			return nil, errHelpNotUTF8(mf.GetName())
		}
	}
	return families, nil
}

// sortByName sorts families by name, keeping the body order of equal names.
func sortByName(families []*dto.MetricFamily) {
	slices.SortStableFunc(families, func(a, b *dto.MetricFamily) int {
		return strings.Compare(a.GetName(), b.GetName())
	})
}

// checkFamily applies to a protobuf family the checks the text parser makes
// while parsing: valid metric and label names, UTF-8 label values, no
// __name__ label and no repeated label name. It also requires that every
// metric carries the value field of the family's type, which the renderers
// need, and sets the family's Type when the message left it out.
//
// Every string the message carries must be valid UTF-8 (see
// checkFamilyUTF8), whatever the name rules: proto.Unmarshal does not check
// the strings of a proto2 message, and one HELP text that is not UTF-8 makes
// Prometheus refuse every text and OpenMetrics scrape that holds it.
func checkFamily(mf *dto.MetricFamily, utf8Names bool) error {
	name := mf.GetName()
	if !ValidMetricName(name, utf8Names) {
		if !utf8.ValidString(name) {
			return fmt.Errorf("metric name %q is not valid UTF-8", name)
		}
		return fmt.Errorf("invalid metric name %q", name)
	}
	if err := checkFamilyUTF8(mf); err != nil {
		return err
	}
	typ := mf.GetType()
	if mf.Type == nil {
		mf.Type = typ.Enum()
	}
	for _, m := range mf.Metric {
		for i, lp := range m.Label {
			ln := lp.GetName()
			if !ValidLabelName(ln, utf8Names) {
				if !utf8.ValidString(ln) {
					return fmt.Errorf("label name %q in metric %q is not valid UTF-8", ln, name)
				}
				return fmt.Errorf("invalid label name %q in metric %q", ln, name)
			}
			if ln == model.MetricNameLabel {
				return fmt.Errorf("label name %q is reserved, in metric %q", ln, name)
			}
			if !utf8.ValidString(lp.GetValue()) {
				return fmt.Errorf("invalid label value %q for label %q in metric %q", lp.GetValue(), ln, name)
			}
			for _, prev := range m.Label[:i] {
				if prev.GetName() == ln {
					return fmt.Errorf("duplicate label name %q in metric %q", ln, name)
				}
			}
		}
		if err := checkExemplarsUTF8(m); err != nil {
			return fmt.Errorf("metric %q: %w", name, err)
		}
		if err := CheckMetricValue(typ, m); err != nil {
			return fmt.Errorf("metric %q: %w", name, err)
		}
	}
	return nil
}

// checkFamilyUTF8 reports a HELP text or unit of mf that is not valid UTF-8,
// naming the field: Prometheus' scrape parsers refuse a whole scrape for
// such a HELP line (text and OpenMetrics: "help text ... is not a valid utf8
// string"), so it must never be stored. The metric name is checked before,
// with the name rules. checkFamily calls it for every protobuf family; the
// text decoders check HELP texts themselves (the text format 0.0.4 has no
// unit). A valid text costs one utf8.ValidString pass over its bytes.
func checkFamilyUTF8(mf *dto.MetricFamily) error {
	if !utf8.ValidString(mf.GetHelp()) {
		return errHelpNotUTF8(mf.GetName())
	}
	if !utf8.ValidString(mf.GetUnit()) {
		return fmt.Errorf("unit of metric %q is not valid UTF-8", mf.GetName())
	}
	return nil
}

// errHelpNotUTF8 is the reason a family whose HELP text is not UTF-8 is
// refused, the same from both decoders.
func errHelpNotUTF8(name string) error {
	return fmt.Errorf("help text of metric %q is not valid UTF-8", name)
}

// checkExemplarsUTF8 reports an exemplar label name or value of m that is
// not valid UTF-8, so that such a push is refused as a malformed body and
// changes nothing (the push pipeline's exemplar check, also refuses
// it, but as a push that parsed, which records a failure time). Exemplars
// come only in protobuf bodies; a metric without any costs two nil checks.
func checkExemplarsUTF8(m *dto.Metric) error {
	return EachExemplar(m, exemplarLabelsUTF8)
}

// exemplarLabelsUTF8 reports the first label name or value of e that is not
// valid UTF-8.
func exemplarLabelsUTF8(e *dto.Exemplar) error {
	for _, lp := range e.Label {
		if !utf8.ValidString(lp.GetName()) {
			return fmt.Errorf("label name %q is not valid UTF-8", lp.GetName())
		}
		if !utf8.ValidString(lp.GetValue()) {
			return fmt.Errorf("value of label %s is not valid UTF-8", QuoteLabelName(lp.GetName()))
		}
	}
	return nil
}

// CheckMetricValue reports an error unless m carries exactly one value
// field, the one its family's type typ calls for. The text parser guarantees
// this; protobuf bodies and stored data are checked with it.
func CheckMetricValue(typ dto.MetricType, m *dto.Metric) error {
	var want string
	var ok bool
	switch typ {
	case dto.MetricType_COUNTER:
		want, ok = "counter", m.Counter != nil
	case dto.MetricType_GAUGE:
		want, ok = "gauge", m.Gauge != nil
	case dto.MetricType_SUMMARY:
		want, ok = "summary", m.Summary != nil
	case dto.MetricType_UNTYPED:
		want, ok = "untyped", m.Untyped != nil
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		want, ok = "histogram", m.Histogram != nil
	default:
		return fmt.Errorf("unknown metric type %d", int32(typ))
	}
	set := 0
	for _, present := range []bool{m.Counter != nil, m.Gauge != nil, m.Untyped != nil, m.Summary != nil, m.Histogram != nil} {
		if present {
			set++
		}
	}
	if !ok || set != 1 {
		return fmt.Errorf("a metric of type %s must carry exactly one %s value", strings.ToLower(typ.String()), want)
	}
	return nil
}
