package web

// The JSON API v1: /api/v1/status and /api/v1/metrics with the reference
// Pushgateway's shapes (REFERENCE §4.1–4.2), and the conversion of stored
// series into the strings both the API and the UI show.
//
// Where pushgate differs from the reference, on purpose:
//   - Groups in /api/v1/metrics are sorted by grouping key, so the output is
//     deterministic; the reference's order is random.
//   - A family named "labels" or "last_push_successful" does not clobber the
//     group's own keys of that name: the group's keys win and such a family
//     is left out of the group object (it is still scraped from /metrics).
//     In the reference the family silently replaces the group's key.
//   - GAUGE_HISTOGRAM families are shown as histograms; the reference shows
//     every series of such a family as "value": "0".
//   - The push_failure_time_seconds family object of a group with a
//     rejected push on record has one more field, "reason": the last
//     rejection's one-line reason, kept with the failure time. The group
//     object keeps the reference's shape (labels, last_push_successful,
//     then only family objects), which typed clients of the reference
//     rely on, and such clients ignore unknown fields inside a family
//     object. Groups without a reason look exactly as in the reference.
//   - push_failure_time_seconds of a group that never failed shows the last
//     successful push's time; the reference shows the first one's, which
//     pushgate does not keep.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/store"
)

// apiHeaders are set on every API v1 response, as the reference sets them.
var apiHeaders = [...][2]string{
	{"Content-Type", "application/json"},
	{"Access-Control-Allow-Origin", "*"},
	{"Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS"},
	{"Access-Control-Allow-Headers", "Accept, Authorization, Content-Type, Origin"},
	{"Access-Control-Expose-Headers", "Date"},
	{"Cache-Control", "no-cache, no-store, must-revalidate"},
}

// setAPIHeaders sets the content type, CORS and caching headers every API v1
// response carries.
func setAPIHeaders(w http.ResponseWriter) {
	h := w.Header()
	for _, kv := range apiHeaders {
		h.Set(kv[0], kv[1])
	}
}

// apiOptions answers OPTIONS on any /api/v1 path: 200, empty body, with the
// CORS headers.
func (h *Handler) apiOptions(w http.ResponseWriter, r *http.Request) {
	setAPIHeaders(w)
	w.WriteHeader(http.StatusOK)
}

// apiEnvelope is the reference's response envelope.
type apiEnvelope struct {
	Status    string `json:"status"`
	Data      any    `json:"data,omitempty"`
	ErrorType string `json:"errorType,omitempty"`
	Error     string `json:"error,omitempty"`
}

// writeAPI writes a success envelope around data.
func (h *Handler) writeAPI(w http.ResponseWriter, status int, data any) {
	setAPIHeaders(w)
	b, err := json.Marshal(apiEnvelope{Status: "success", Data: data})
	if err != nil {
		h.logger.Error("encode API response", "err", err)
		h.writeAPIError(w, http.StatusInternalServerError, "internal", fmt.Errorf("encode response: %w", err))
		return
	}
	w.WriteHeader(status)
	b = append(b, '\n')
	_, _ = w.Write(b)
}

// writeAPIError writes an error envelope ({"status":"error","errorType":...,
// "error":...}) with a one-line reason, as the Prometheus APIs do.
func (h *Handler) writeAPIError(w http.ResponseWriter, status int, errorType string, err error) {
	setAPIHeaders(w)
	b, _ := json.Marshal(apiEnvelope{Status: "error", ErrorType: errorType, Error: err.Error()})
	w.WriteHeader(status)
	b = append(b, '\n')
	_, _ = w.Write(b)
}

// apiStatusData is the data of GET /api/v1/status.
type apiStatusData struct {
	BuildInformation map[string]string `json:"build_information"`
	Flags            map[string]string `json:"flags"`
	StartTime        string            `json:"start_time"`
}

// buildInformation returns the build information under the reference's keys.
func (h *Handler) buildInformation() map[string]string {
	b := h.opts.Build
	return map[string]string{
		"branch":    b.Branch,
		"buildDate": b.BuildDate,
		"buildUser": b.BuildUser,
		"goVersion": b.GoVersion,
		"revision":  b.Revision,
		"version":   b.Version,
	}
}

// apiStatus serves GET /api/v1/status: build information, flags and the
// start time.
func (h *Handler) apiStatus(w http.ResponseWriter, r *http.Request) {
	flags := h.opts.Flags
	if flags == nil {
		flags = map[string]string{}
	}
	h.writeAPI(w, http.StatusOK, apiStatusData{
		BuildInformation: h.buildInformation(),
		Flags:            flags,
		StartTime:        h.opts.StartTime.Format(time.RFC3339Nano),
	})
}

// apiMetrics serves GET /api/v1/metrics: every group with its families, in
// the reference's shape, sorted by grouping key. The response is streamed one
// group at a time, so its memory cost is that of the largest group, not of
// the store.
func (h *Handler) apiMetrics(w http.ResponseWriter, r *http.Request) {
	setAPIHeaders(w)
	w.WriteHeader(http.StatusOK)
	if _, err := io.WriteString(w, `{"status":"success","data":[`); err != nil {
		return
	}
	var buf bytes.Buffer
	for i, g := range h.store().Groups() {
		if err := r.Context().Err(); err != nil {
			return
		}
		buf.Reset()
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := appendGroupJSON(&buf, g); err != nil {
			// The status line is gone; log, and end the body with invalid
			// JSON rather than a silently truncated but valid document.
			h.logger.Error("encode group for /api/v1/metrics", "group", g.Key().String(), "err", err)
			_, _ = io.WriteString(w, "\nerror: "+err.Error()+"\n")
			return
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return
		}
	}
	_, _ = io.WriteString(w, "]}\n")
}

// apiFamily is one family in a group object of /api/v1/metrics.
type apiFamily struct {
	TimeStamp string           `json:"time_stamp"`
	Type      string           `json:"type"`
	Help      string           `json:"help,omitempty"`
	Metrics   []map[string]any `json:"metrics"`
	// Reason is pushgate's own, absent from the reference: set only in
	// the push_failure_time_seconds family of a group with a rejected push
	// on record, to that rejection's one-line reason.
	Reason string `json:"reason,omitempty"`
}

// appendGroupJSON writes one group object: "labels", "last_push_successful",
// then one key per family, in name order, each holding a family object; the
// push_failure_time_seconds family carries the group's failure reason, if
// it has one.
func appendGroupJSON(buf *bytes.Buffer, g *store.Group) error {
	enc := json.NewEncoder(buf)
	// encode appends v without the newline json.Encoder ends values with.
	encode := func(v any) error {
		if err := enc.Encode(v); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1)
		return nil
	}
	key := g.Key()
	buf.WriteString(`{"labels":`)
	if err := encode(key.Map()); err != nil {
		return fmt.Errorf("encode labels of %s: %w", key, err)
	}
	buf.WriteString(`,"last_push_successful":`)
	buf.WriteString(strconv.FormatBool(g.LastPushSuccessful()))
	for _, f := range g.Families() {
		name := f.Name()
		if name == "labels" || name == "last_push_successful" {
			continue // the group's own keys win; see the file comment
		}
		mf, err := f.Decode()
		if err != nil {
			return fmt.Errorf("group %s: %w", key, err)
		}
		buf.WriteByte(',')
		if err := encode(name); err != nil {
			return fmt.Errorf("encode family name %q: %w", name, err)
		}
		buf.WriteByte(':')
		af := apiFamily{
			TimeStamp: g.FamilyTime(f).Format(time.RFC3339Nano),
			Type:      f.Type().String(),
			Help:      f.Help(),
			Metrics:   make([]map[string]any, 0, len(mf.GetMetric())),
		}
		for _, m := range mf.GetMetric() {
			af.Metrics = append(af.Metrics, newSeriesView(mf.GetType(), m).apiObject())
		}
		if name == store.PushFailureTimeName {
			af.Reason = g.FailureReason()
		}
		if err := encode(af); err != nil {
			return fmt.Errorf("encode family %q of %s: %w", name, key, err)
		}
	}
	buf.WriteByte('}')
	return nil
}

// seriesKind says which values a seriesView holds.
type seriesKind int

const (
	kindScalar    seriesKind = iota // counter, gauge, untyped: Value
	kindSummary                     // Quantiles, Count, Sum
	kindHistogram                   // classic Buckets, Count, Sum
	kindNative                      // Native buckets, Count, Sum
)

// seriesView is one series with its values formatted as the API shows them:
// Go's default float formatting (fmt.Sprint), counts as integers unless the
// series carries float counts.
type seriesView struct {
	Labels    []groupkey.Label
	Kind      seriesKind
	Value     string
	Quantiles []stringPair   // quantile → value, in pushed order
	Buckets   []stringPair   // upper bound → cumulative count, in pushed order
	Native    []nativeBucket // in ascending order of boundaries
	Count     string
	Sum       string
	// Schema and ZeroThreshold describe a native histogram, for the UI.
	Schema        int32
	ZeroThreshold string
}

// stringPair is a key and a value, both formatted.
type stringPair struct{ K, V string }

// nativeBucket is one populated bucket of a native histogram, in the
// Prometheus API convention: Boundaries is 0 for (lower, upper], 1 for
// [lower, upper), 2 for (lower, upper), 3 for [lower, upper].
type nativeBucket struct {
	Boundaries   int
	Lower, Upper string
	Count        string
}

// Interval renders the bucket as an interval, e.g. "(0.5, 1]".
func (b nativeBucket) Interval() string {
	open, closeBr := "(", "]"
	switch b.Boundaries {
	case 1:
		open, closeBr = "[", ")"
	case 2:
		closeBr = ")"
	case 3:
		open = "["
	}
	return open + b.Lower + ", " + b.Upper + closeBr
}

// newSeriesView formats metric m of a family of type typ.
func newSeriesView(typ dto.MetricType, m *dto.Metric) seriesView {
	sv := seriesView{Labels: make([]groupkey.Label, 0, len(m.GetLabel()))}
	for _, lp := range m.GetLabel() {
		sv.Labels = append(sv.Labels, groupkey.Label{Name: lp.GetName(), Value: lp.GetValue()})
	}
	slices.SortFunc(sv.Labels, func(a, b groupkey.Label) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	switch typ {
	case dto.MetricType_SUMMARY:
		s := m.GetSummary()
		sv.Kind = kindSummary
		for _, q := range s.GetQuantile() {
			sv.Quantiles = append(sv.Quantiles, stringPair{formatFloat(q.GetQuantile()), formatFloat(q.GetValue())})
		}
		sv.Count = strconv.FormatUint(s.GetSampleCount(), 10)
		sv.Sum = formatFloat(s.GetSampleSum())
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		hist := m.GetHistogram()
		sv.Sum = formatFloat(hist.GetSampleSum())
		if len(hist.GetNegativeSpan())+len(hist.GetPositiveSpan()) > 0 {
			sv.Kind = kindNative
			sv.Native, sv.Count = nativeBuckets(hist)
			sv.Schema = hist.GetSchema()
			sv.ZeroThreshold = formatFloat(hist.GetZeroThreshold())
			break
		}
		sv.Kind = kindHistogram
		for _, b := range hist.GetBucket() {
			c := strconv.FormatUint(b.GetCumulativeCount(), 10)
			if f := b.GetCumulativeCountFloat(); f > 0 {
				c = formatFloat(f)
			}
			sv.Buckets = append(sv.Buckets, stringPair{formatFloat(b.GetUpperBound()), c})
		}
		sv.Count = strconv.FormatUint(hist.GetSampleCount(), 10)
		if f := hist.GetSampleCountFloat(); f > 0 {
			sv.Count = formatFloat(f)
		}
	default:
		sv.Kind = kindScalar
		var v float64
		switch {
		case m.Gauge != nil:
			v = m.GetGauge().GetValue()
		case m.Counter != nil:
			v = m.GetCounter().GetValue()
		case m.Untyped != nil:
			v = m.GetUntyped().GetValue()
		}
		sv.Value = formatFloat(v)
	}
	return sv
}

// apiObject returns the series as a /api/v1/metrics metric object.
func (sv seriesView) apiObject() map[string]any {
	labels := make(map[string]string, len(sv.Labels))
	for _, l := range sv.Labels {
		labels[l.Name] = l.Value
	}
	obj := map[string]any{"labels": labels}
	switch sv.Kind {
	case kindScalar:
		obj["value"] = sv.Value
	case kindSummary:
		obj["quantiles"] = pairMap(sv.Quantiles)
		obj["count"], obj["sum"] = sv.Count, sv.Sum
	case kindHistogram:
		obj["buckets"] = pairMap(sv.Buckets)
		obj["count"], obj["sum"] = sv.Count, sv.Sum
	case kindNative:
		buckets := make([][]any, 0, len(sv.Native))
		for _, b := range sv.Native {
			buckets = append(buckets, []any{b.Boundaries, b.Lower, b.Upper, b.Count})
		}
		obj["buckets"] = buckets
		obj["count"], obj["sum"] = sv.Count, sv.Sum
	}
	return obj
}

// pairMap turns pairs into the JSON object the reference sends.
func pairMap(ps []stringPair) map[string]string {
	m := make(map[string]string, len(ps))
	for _, p := range ps {
		m[p.K] = p.V
	}
	return m
}

// formatFloat formats v with Go's default float formatting, the one the
// reference uses (fmt.Sprint): shortest representation, exponent for large
// and small magnitudes, "+Inf", "-Inf", "NaN".
func formatFloat(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// nativeBuckets returns the populated buckets of native histogram hist in
// ascending order — negative buckets (most negative first), the zero bucket,
// positive buckets — and the total count. Float histograms (any float count
// set) use the absolute float counts; integer histograms the deltas. Empty
// buckets are left out, as the reference and Prometheus' API do.
func nativeBuckets(hist *dto.Histogram) ([]nativeBucket, string) {
	isFloat := hist.GetSampleCountFloat() > 0 || hist.GetZeroCountFloat() > 0
	schema := hist.GetSchema()
	var out []nativeBucket

	neg := spanBuckets(schema, hist.GetNegativeSpan(), hist.GetNegativeDelta(), hist.GetNegativeCount(), isFloat)
	for i := len(neg) - 1; i >= 0; i-- {
		b := neg[i]
		// The mirror image of a positive bucket: [-upper, -lower).
		out = append(out, nativeBucket{Boundaries: 1, Lower: formatFloat(-b.upper), Upper: formatFloat(-b.lower), Count: b.count})
	}
	zt := hist.GetZeroThreshold()
	if isFloat {
		if zc := hist.GetZeroCountFloat(); zc != 0 {
			out = append(out, nativeBucket{Boundaries: 3, Lower: formatFloat(-zt), Upper: formatFloat(zt), Count: formatFloat(zc)})
		}
	} else if zc := hist.GetZeroCount(); zc != 0 {
		out = append(out, nativeBucket{Boundaries: 3, Lower: formatFloat(-zt), Upper: formatFloat(zt), Count: strconv.FormatUint(zc, 10)})
	}
	for _, b := range spanBuckets(schema, hist.GetPositiveSpan(), hist.GetPositiveDelta(), hist.GetPositiveCount(), isFloat) {
		out = append(out, nativeBucket{Boundaries: 0, Lower: formatFloat(b.lower), Upper: formatFloat(b.upper), Count: b.count})
	}
	count := strconv.FormatUint(hist.GetSampleCount(), 10)
	if isFloat {
		count = formatFloat(hist.GetSampleCountFloat())
	}
	return out, count
}

// absBucket is a populated bucket of one sign, by absolute boundaries.
type absBucket struct {
	lower, upper float64
	count        string
}

// spanBuckets expands spans and deltas (or absolute float counts) into the
// populated buckets of one sign, in increasing bucket index.
func spanBuckets(schema int32, spans []*dto.BucketSpan, deltas []int64, counts []float64, isFloat bool) []absBucket {
	var (
		out  []absBucket
		idx  int32
		pos  int   // position in deltas or counts
		last int64 // running absolute count for deltas
	)
	for si, s := range spans {
		if si == 0 {
			idx = s.GetOffset()
		} else {
			idx += s.GetOffset()
		}
		for j := uint32(0); j < s.GetLength(); j++ {
			var c string
			if isFloat {
				if pos >= len(counts) {
					return out
				}
				if counts[pos] != 0 {
					c = formatFloat(counts[pos])
				}
			} else {
				if pos >= len(deltas) {
					return out
				}
				last += deltas[pos]
				if last != 0 {
					c = strconv.FormatInt(last, 10)
				}
			}
			if c != "" {
				out = append(out, absBucket{lower: bucketBound(idx-1, schema), upper: bucketBound(idx, schema), count: c})
			}
			pos++
			idx++
		}
	}
	return out
}

// bucketBound returns the upper bound of bucket idx of the exponential
// schema: 2^(idx · 2^-schema). Bucket idx covers (bound(idx-1), bound(idx)].
// The top bucket's bound, 2^1024, is math.MaxFloat64, as in Prometheus.
func bucketBound(idx, schema int32) float64 {
	if schema <= 0 {
		exp := int(idx) << uint(-schema)
		if exp == 1024 {
			return math.MaxFloat64
		}
		return math.Ldexp(1, exp)
	}
	// idx = whole·2^schema + frac with 0 ≤ frac < 2^schema, so the bound is
	// 2^whole · 2^(frac/2^schema) = fracBound · 2^(whole+1).
	n := int32(1) << uint(schema)
	whole := idx >> uint(schema) // floor division, also for negative idx
	frac := idx - whole*n
	if frac == 0 && whole == 1024 {
		return math.MaxFloat64
	}
	return math.Ldexp(fractionBounds[schema][frac], int(whole)+1)
}

// fractionBounds[s][j] is 2^(j/2^s − 1), the mantissa in [0.5, 1) of the
// bounds of schema s (1 ≤ s ≤ 8).
var fractionBounds = makeFractionBounds()

// makeFractionBounds computes fractionBounds by the recurrence that the
// Prometheus client libraries and server document for their constant
// tables: within schema s each odd entry is the previous entry times
// 2^(2^-s), and each even entry is schema s−1's entry, already computed.
// The values are therefore bit for bit the ones Prometheus uses (some are one
// ulp off the correctly rounded value, 2^-0.5 among them), so the API shows
// the same boundaries as Prometheus does.
func makeFractionBounds() [9][]float64 {
	var t [9][]float64
	t[0] = []float64{0.5}
	for s := 1; s < len(t); s++ {
		n := 1 << s
		factor := math.Exp2(math.Exp2(float64(-s)))
		b := make([]float64, n)
		b[0] = 0.5
		for j := 1; j < n; j++ {
			if j%2 == 0 {
				b[j] = t[s-1][j/2]
			} else {
				b[j] = b[j-1] * factor
			}
		}
		t[s] = b
	}
	return t
}
