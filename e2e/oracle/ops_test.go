package oracle

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// opKind says what an op does.
type opKind int

const (
	// opPush is a PUT or POST of a body to a grouping path.
	opPush opKind = iota
	// opDelete is a DELETE of a grouping path.
	opDelete
	// opWipe is PUT /api/v1/admin/wipe.
	opWipe
	// opAdminDelete is DELETE /api/v1/admin/groups?match[]=….
	opAdminDelete
	// opScrape is one GET of /metrics in one variant, checked on its own:
	// it matters when what was scraped last changes what a push does.
	opScrape
	// opCheck scrapes every variant and checks them against each other and
	// against the model.
	opCheck
	// opRestart stops the gateway (SIGTERM, or SIGKILL when hard) and
	// starts it again on its persistence file; the next check must find
	// everything unchanged.
	opRestart
)

// protoContentType is the media type of delimited protobuf bodies.
const protoContentType = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"

// op is one step of a sequence. Ops are built once by the generator and
// never changed, so that a sequence can be replayed and shrunk.
type op struct {
	kind opKind
	// method is PUT or POST for pushes.
	method string
	// path is the URL path below the gateway's base URL, already escaped.
	path string
	// key is the grouping key the path means, as the model sees it. It
	// depends on --push.enable-utf8-names (U__ names), so the generator
	// stores both readings.
	key, keyUTF8 map[string]string
	// proto marks a delimited protobuf body; otherwise the body is text.
	proto bool
	// gzip sends the body with Content-Encoding: gzip.
	gzip bool
	// body is the uncompressed request body.
	body []byte
	// families is what body means: the model of the push. For a text
	// body it is what expfmt's text parser, the reference's, reads from it
	// (it drops a quantile="NaN" line, for one); textErr is set when that
	// parser rejects the body.
	families []*dto.MetricFamily
	textErr  error
	// textParts is a text body in pieces: per family its HELP and TYPE
	// lines, then the lines of each metric, so that shrinking can drop a
	// family or a metric and keep every other line as it was.
	textParts [][]string
	// match holds the admin delete's match[] selectors, and selectors what
	// they mean to the model (each an AND of equality matchers; several
	// selectors are ORed, as in Prometheus' APIs).
	match     []string
	selectors []selector
	// variant is the scrape variant of opScrape.
	variant string
	// order is the order in which opCheck scrapes the variants: what was
	// scraped last can matter.
	order []int
	// hard makes opRestart kill the gateway with SIGKILL.
	hard bool
}

// encode sets the body from the families (protobuf) or the text parts.
func (o *op) encode() {
	var b bytes.Buffer
	if o.proto {
		for _, mf := range o.families {
			if _, err := protodelim.MarshalTo(&b, mf); err != nil {
				panic(fmt.Sprintf("encode family %s: %v", mf.GetName(), err))
			}
		}
		o.body = b.Bytes()
		return
	}
	for _, parts := range o.textParts {
		for _, p := range parts {
			b.WriteString(p)
		}
	}
	o.body = b.Bytes()
	o.families, o.textErr = parseTextBody(o.body)
}

// parseTextBody reads a text body as the reference Pushgateway does, with
// expfmt's text parser (UTF-8 names allowed), families sorted by name.
func parseTextBody(body []byte) ([]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	m, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out := make([]*dto.MetricFamily, 0, len(m))
	for _, mf := range m {
		out = append(out, mf)
	}
	slices.SortFunc(out, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out, nil
}

// parts returns how many families the body was written with (a text
// body's families are counted as written, before parsing).
func (o *op) parts() int {
	if o.proto {
		return len(o.families)
	}
	return len(o.textParts)
}

// metrics returns how many metrics family i was written with.
func (o *op) metrics(i int) int {
	if o.proto {
		return len(o.families[i].Metric)
	}
	return len(o.textParts[i]) - 1
}

// withoutFamily returns a copy of the push o without family i (as
// written).
func (o *op) withoutFamily(i int) *op {
	c := *o
	if o.proto {
		c.families = slices.Delete(slices.Clone(o.families), i, i+1)
	} else {
		c.textParts = slices.Delete(slices.Clone(o.textParts), i, i+1)
	}
	c.encode()
	return &c
}

// withoutMetric returns a copy of the push o without metric j of family i
// (as written), or nil when that is the family's only metric.
func (o *op) withoutMetric(i, j int) *op {
	if o.metrics(i) < 2 {
		return nil
	}
	c := *o
	if o.proto {
		c.families = slices.Clone(o.families)
		mf := proto.Clone(o.families[i]).(*dto.MetricFamily)
		mf.Metric = slices.Delete(mf.Metric, j, j+1)
		c.families[i] = mf
	} else {
		c.textParts = slices.Clone(o.textParts)
		c.textParts[i] = slices.Delete(slices.Clone(o.textParts[i]), j+1, j+2)
	}
	c.encode()
	return &c
}

// selector is one match[] of an admin delete: label name, value pairs that
// must all hold (an absent label has the value "").
type selector []matcherEq

// matcherEq is an equality matcher.
type matcherEq struct{ name, value string }

// matches reports whether the grouping key satisfies every matcher of s.
func (s selector) matches(key map[string]string) bool {
	for _, m := range s {
		if key[m.name] != m.value {
			return false
		}
	}
	return true
}

// request returns the method, path and headers (name, value pairs) and body
// an op sends.
func (o *op) request() (method, path string, body []byte, header []string) {
	switch o.kind {
	case opPush:
		body = o.body
		if o.proto {
			header = append(header, "Content-Type", protoContentType)
		}
		if o.gzip {
			body = gzipBytes(body)
			header = append(header, "Content-Encoding", "gzip")
		}
		return o.method, o.path, body, header
	case opDelete:
		return "DELETE", o.path, nil, nil
	case opWipe:
		return "PUT", "/api/v1/admin/wipe", nil, nil
	case opAdminDelete:
		var q []string
		for _, m := range o.match {
			q = append(q, "match[]="+queryEscape(m))
		}
		return "DELETE", "/api/v1/admin/groups?" + strings.Join(q, "&"), nil, nil
	}
	return "", "", nil, nil
}

// queryEscape escapes a query parameter value like url.QueryEscape but
// keeps it readable where that is safe.
func queryEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte("-_.~", c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// describe renders the op as a curl-like step for a failure message, with
// the body below it (protobuf bodies as the text of their messages).
func (o *op) describe() string {
	switch o.kind {
	case opScrape:
		v := variants[variantIndex(o.variant)]
		return fmt.Sprintf("curl -s%s -H %s \"$U/metrics\"    # scrape %s", gzipFlag(v.gzip), shellQuote("Accept: "+v.accept), v.name)
	case opCheck:
		return "# check: scrape every variant, compare formats and the model"
	case opRestart:
		if o.hard {
			return "# kill -9 the gateway, start it again on the same --persistence.file"
		}
		return "# restart the gateway (SIGTERM, start again on the same --persistence.file)"
	}
	method, path, _, header := o.request()
	var b strings.Builder
	fmt.Fprintf(&b, "curl -X %s", method)
	for i := 0; i+1 < len(header); i += 2 {
		fmt.Fprintf(&b, " -H %s", shellQuote(header[i]+": "+header[i+1]))
	}
	if o.kind == opPush {
		if o.gzip {
			b.WriteString(" --data-binary @<(gzip -c body)")
		} else {
			b.WriteString(" --data-binary @body")
		}
	}
	fmt.Fprintf(&b, " \"$U\"%s", shellQuote(path))
	if o.kind == opPush {
		if len(o.body) == 0 {
			b.WriteString("    # empty body")
		} else if o.proto {
			b.WriteString("    # body: delimited protobuf of")
			for _, mf := range o.families {
				b.WriteString("\n      " + prototext.MarshalOptions{}.Format(mf))
			}
		} else {
			b.WriteString("    # body:")
			for _, line := range strings.Split(strings.TrimSuffix(string(o.body), "\n"), "\n") {
				b.WriteString("\n      " + line)
			}
		}
	}
	return b.String()
}

// gzipFlag is curl's flag asking for a compressed answer.
func gzipFlag(on bool) string {
	if on {
		return " --compressed"
	}
	return ""
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
