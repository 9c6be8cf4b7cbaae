package web

// OTLP/HTTP metrics ingest (DESIGN §7): POST /otlp/v1/metrics,
// /api/v1/otlp/v1/metrics and /otlp/job/<job>{/<label>/<value>}/v1/metrics.
// A request is decoded with pdata, translated into groups (package otlp),
// checked against the credential group by group, and each group is pushed
// as a POST push of the families it carries, through the same store checks,
// journal and log as any push. Answers follow the OTLP/HTTP specification:
// 200 with an ExportMetricsServiceResponse (partial_success for what was
// refused while the rest was stored), 4xx and 5xx with a google.rpc.Status
// body, both in the request's encoding.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/otlp"
)

// OTLPOptions configures the OTLP endpoints.
type OTLPOptions struct {
	// Settings are the translation, grouping and delta settings
	// (--otlp.*); Settings.UTF8Names follows Options.UTF8Names. New
	// refuses settings that otlp.NewTranslator refuses.
	Settings otlp.Settings
	// Translate turns a decoded request into groups at the request's
	// time; nil is an otlp.Translator for Settings. Tests give their own.
	Translate func(md pmetric.Metrics, urlLabels map[string]string, now time.Time) ([]otlp.Group, error)
}

// newOTLPTranslate returns the translation the OTLP endpoints use.
func newOTLPTranslate(opts Options) (func(pmetric.Metrics, map[string]string, time.Time) ([]otlp.Group, error), error) {
	if opts.OTLP.Translate != nil {
		return opts.OTLP.Translate, nil
	}
	s := opts.OTLP.Settings
	s.UTF8Names = opts.UTF8Names
	t, err := otlp.NewTranslator(s)
	if err != nil {
		return nil, err
	}
	return t.Translate, nil
}

// otlpHandler is the rejected-request counter's handler label of the OTLP
// endpoints.
const otlpHandler = "otlp"

// otlpRefusal is a request refused as a whole: its status code, the reason
// label it is counted under (a fixed set) and the error it is answered with.
type otlpRefusal struct {
	code   int
	reason string
	err    error
}

// otlpRefuse returns a refusal.
func otlpRefuse(code int, reason string, err error) *otlpRefusal {
	return &otlpRefusal{code: code, reason: reason, err: err}
}

// otlp handles POST on an OTLP endpoint. rest is the escaped grouping path
// after "/otlp/" for the grouping-path route, "" for the others.
func (h *Handler) otlp(w http.ResponseWriter, r *http.Request, rest string) {
	start := time.Now()
	defer h.metrics.observePush(r, start)
	enc, err := otlp.ParseContentType(r.Header.Get("Content-Type"))
	if err != nil {
		// The request's encoding is unknown; the status goes in protobuf,
		// the specification's default.
		h.otlpFail(w, r, otlp.Protobuf, otlpRefuse(http.StatusUnsupportedMediaType, "media_type", err))
		return
	}
	ans, ref := h.otlpServe(r, rest, enc, start)
	if ref != nil {
		if ref.code < http.StatusInternalServerError {
			h.metrics.otlp.points.WithLabelValues("rejected").Add(float64(ans.points))
		}
		h.otlpFail(w, r, enc, ref)
		return
	}
	h.otlpAnswer(w, r, enc, ans)
}

// otlpAnswer is what a stored request is answered with.
type otlpAnswer struct {
	pos      journal.Position
	points   int
	rejected int
	reason   string
}

// otlpServe decodes, translates, authorizes and stores a request.
func (h *Handler) otlpServe(r *http.Request, rest string, enc otlp.Encoding, start time.Time) (otlpAnswer, *otlpRefusal) {
	lim := h.store().Limits()
	var urlLabels map[string]string
	if rest != "" {
		key, err := groupkey.ParsePath(rest, groupkey.PathOptions{UTF8Names: h.opts.UTF8Names})
		if err != nil {
			return otlpAnswer{}, otlpRefuse(http.StatusBadRequest, "path", err)
		}
		if err := admission.GroupingLimits(key, lim); err != nil {
			reason, code := storeErrorStatus(err)
			return otlpAnswer{}, otlpRefuse(code, reason, err)
		}
		urlLabels = key.Map()
	}
	body, err := h.otlpBody(r)
	if err != nil {
		return otlpAnswer{}, err
	}
	md, derr := otlp.Decode(body, enc)
	if derr != nil {
		return otlpAnswer{}, otlpRefuse(http.StatusBadRequest, "body", derr)
	}
	decoded := otlpAnswer{points: md.DataPointCount()}
	groups, terr := h.otlpTranslate(md, urlLabels, start)
	if terr != nil {
		return decoded, otlpRefuse(http.StatusBadRequest, "body", terr)
	}
	if ref := h.otlpPermit(r, groups); ref != nil {
		return decoded, ref
	}
	ans, ref := h.otlpStore(r.Context(), groups, start)
	ans.points = decoded.points
	return ans, ref
}

// otlpBody reads the request body, decompressed, under the push body limit
// (--push.max-body-bytes, after decompression, so that a gzip bomb stops
// at the limit).
func (h *Handler) otlpBody(r *http.Request) ([]byte, *otlpRefusal) {
	rc, err := h.requestBody(r)
	if err != nil {
		return nil, otlpRefuse(statusOf(err), "encoding", err)
	}
	defer rc.Close()
	var src io.Reader = rc
	limit := h.opts.MaxBodyBytes
	if limit > 0 {
		src = io.LimitReader(rc, limit+1)
	}
	// Sized from Content-Length when the body is not compressed: io.ReadAll
	// grows its buffer about ten times for a 3 KB request.
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && rc == r.Body && (limit <= 0 || n <= limit) {
		buf.Grow(int(n) + bytes.MinRead)
	}
	_, err = buf.ReadFrom(src)
	body := buf.Bytes()
	if err != nil {
		return nil, otlpRefuse(http.StatusBadRequest, "encoding", fmt.Errorf("read request body: %w", err))
	}
	if limit > 0 && int64(len(body)) > limit {
		return nil, otlpRefuse(http.StatusRequestEntityTooLarge, "too_large",
			fmt.Errorf("request body exceeds --push.max-body-bytes (%d bytes) after decompression", limit))
	}
	return body, nil
}

// otlpPermit checks, under a permission file, that the request's
// credential may push to every group the request translated into: the
// route could only authenticate it, since the groups are known only now.
// One group it may not write refuses the whole request.
func (h *Handler) otlpPermit(r *http.Request, groups []otlp.Group) *otlpRefusal {
	p := h.policy()
	if p == nil {
		return nil
	}
	c, err := p.Authenticate(r)
	if err != nil {
		// The route authenticated it: the file was reloaded meanwhile.
		return otlpRefuse(http.StatusUnauthorized, "unauthenticated", err)
	}
	for _, g := range groups {
		// A group without labels carries only the refusals of a
		// resource whose key could not be derived: nothing is written.
		if g.Labels != nil && !c.MayPush(g.Labels) {
			return otlpRefuse(http.StatusForbidden, "forbidden",
				fmt.Errorf("credential %q may not write to group %s", c.Name(), groupKeyString(g.Labels)))
		}
	}
	return nil
}

// otlpAnswer writes the 200 of a stored request.
func (h *Handler) otlpAnswer(w http.ResponseWriter, r *http.Request, enc otlp.Encoding, ans otlpAnswer) {
	body, err := otlp.EncodeResponse(enc, int64(ans.rejected), ans.reason)
	if err != nil {
		h.otlpFail(w, r, enc, otlpRefuse(http.StatusInternalServerError, "internal", err))
		return
	}
	outcome := "success"
	if ans.rejected > 0 {
		outcome = "partial"
	}
	h.metrics.otlp.requests.WithLabelValues(outcome).Inc()
	h.metrics.otlp.points.WithLabelValues("accepted").Add(float64(max(ans.points-ans.rejected, 0)))
	h.metrics.otlp.points.WithLabelValues("rejected").Add(float64(ans.rejected))
	setCommitPosition(w, ans.pos)
	w.Header().Set("Content-Type", enc.MediaType())
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// otlpFail answers a request refused as a whole with a google.rpc.Status in
// enc, counts it by reason and logs it like a refused push: a client's
// refusal at warn level (rate-limited per reason), a server failure at
// error level. 503s carry Retry-After: OTLP clients retry them, and only
// them (and 429, 502, 504).
func (h *Handler) otlpFail(w http.ResponseWriter, r *http.Request, enc otlp.Encoding, ref *otlpRefusal) {
	h.metrics.reject(otlpHandler, ref.reason)
	outcome := "refused"
	if ref.code >= http.StatusInternalServerError {
		outcome = "failed"
	}
	h.metrics.otlp.requests.WithLabelValues(outcome).Inc()
	if errors.Is(ref.err, journal.ErrNotLeader) && !errors.Is(ref.err, journal.ErrAmbiguous) {
		// Nothing was written: a forwarding replica tries the next
		// leader (see fail).
		w.Header().Set(NotLeaderHeader, "")
	}
	msg := oneLine(ref.err.Error())
	switch {
	case ref.code >= http.StatusInternalServerError && ref.code != http.StatusInsufficientStorage:
		h.logger.Error("request failed", "handler", otlpHandler, "reason", ref.reason, "err", msg)
	default:
		h.rejects.log(h.logger, r, otlpHandler, ref.reason, ref.code, msg)
	}
	if ref.code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retryAfter)
	}
	if ref.code == http.StatusUnauthorized {
		if p := h.policy(); p != nil {
			for _, ch := range p.Challenges() {
				w.Header().Add("WWW-Authenticate", ch)
			}
		}
	}
	body := otlp.EncodeStatus(enc, rpcCode(ref.code), msg)
	w.Header().Set("Content-Type", enc.MediaType())
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(ref.code)
	_, _ = w.Write(body)
}

// rpcCode returns the google.rpc.Code of an HTTP status, as the OTLP
// specification pairs them.
func rpcCode(code int) int32 {
	switch code {
	case http.StatusUnauthorized:
		return otlp.CodeUnauthenticated
	case http.StatusForbidden:
		return otlp.CodePermissionDenied
	case http.StatusRequestEntityTooLarge, http.StatusInsufficientStorage:
		return otlp.CodeResourceExhausted
	case http.StatusServiceUnavailable:
		return otlp.CodeUnavailable
	}
	if code >= http.StatusInternalServerError {
		return otlp.CodeInternal
	}
	return otlp.CodeInvalidArgument
}
