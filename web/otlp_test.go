package web

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/otlp"
)

// otlpTestHandler returns a handler over an empty memory store whose OTLP
// endpoints translate with fakeTranslate.
func otlpTestHandler(t *testing.T, opts Options) *Handler {
	t.Helper()
	opts.OTLP.Translate = fakeTranslate
	h, _ := newTestHandler(t, opts)
	return h
}

// encodeOTLP returns md as a request body in enc.
func encodeOTLP(t *testing.T, md pmetric.Metrics, enc otlp.Encoding) []byte {
	t.Helper()
	req := pmetricotlp.NewExportRequestFromMetrics(md)
	var (
		b   []byte
		err error
	)
	if enc == otlp.JSON {
		b, err = req.MarshalJSON()
	} else {
		b, err = req.MarshalProto()
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// postOTLP sends md to target in enc.
func postOTLP(t *testing.T, h http.Handler, target string, md pmetric.Metrics, enc otlp.Encoding) *httptest.ResponseRecorder {
	t.Helper()
	return do(t, h, http.MethodPost, target, encodeOTLP(t, md, enc), map[string]string{"Content-Type": enc.MediaType()})
}

// exportResponse decodes a 200's ExportMetricsServiceResponse.
func exportResponse(t *testing.T, w *httptest.ResponseRecorder, enc otlp.Encoding) pmetricotlp.ExportResponse {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("answer %d, want 200: %q", w.Code, w.Body)
	}
	if got := w.Header().Get("Content-Type"); got != enc.MediaType() {
		t.Errorf("Content-Type %q, want %q", got, enc.MediaType())
	}
	resp := pmetricotlp.NewExportResponse()
	var err error
	if enc == otlp.JSON {
		err = resp.UnmarshalJSON(w.Body.Bytes())
	} else {
		err = resp.UnmarshalProto(w.Body.Bytes())
	}
	if err != nil {
		t.Fatalf("answer is no ExportMetricsServiceResponse: %v", err)
	}
	return resp
}

// rpcStatus decodes a refusal's google.rpc.Status.
func rpcStatus(t *testing.T, w *httptest.ResponseRecorder, enc otlp.Encoding) (int32, string) {
	t.Helper()
	if got := w.Header().Get("Content-Type"); got != enc.MediaType() {
		t.Errorf("Content-Type %q, want %q", got, enc.MediaType())
	}
	if enc == otlp.JSON {
		var st struct {
			Code    int32  `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
			t.Fatalf("answer is no JSON Status: %v: %q", err, w.Body)
		}
		return st.Code, st.Message
	}
	var st rpcstatus.Status
	if err := proto.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatalf("answer is no protobuf Status: %v", err)
	}
	return st.Code, st.Message
}

func TestOTLPStoresEachResourceAsAGroupInBothEncodings(t *testing.T) {
	for _, enc := range []otlp.Encoding{otlp.Protobuf, otlp.JSON} {
		t.Run(enc.MediaType(), func(t *testing.T) {
			h := otlpTestHandler(t, Options{})
			resp := exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", otlpMetricsRequest(3, "a", "b"), enc), enc)
			if n := resp.PartialSuccess().RejectedDataPoints(); n != 0 {
				t.Errorf("rejected %d points, want 0", n)
			}
			body := scrapeText(t, h)
			for _, want := range []string{`temp_celsius{instance="",job="a",room="a"} 3`, `temp_celsius{instance="",job="b",room="a"} 3`, `runs_total{instance="",job="a"} 3`} {
				if !strings.Contains(body, want) {
					t.Errorf("scrape lacks %s:\n%s", want, body)
				}
			}
		})
	}
}

func TestOTLPReplacesOnlyTheFamiliesARequestCarries(t *testing.T) {
	h := otlpTestHandler(t, Options{})
	if w := do(t, h, http.MethodPut, "/metrics/job/a", []byte("other 1\n"), nil); w.Code != http.StatusOK {
		t.Fatalf("push: %d %s", w.Code, w.Body)
	}
	exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", otlpMetricsRequest(1, "a"), otlp.Protobuf), otlp.Protobuf)
	exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", otlpMetricsRequest(2, "a"), otlp.Protobuf), otlp.Protobuf)
	body := scrapeText(t, h)
	for _, want := range []string{`other{instance="",job="a"} 1`, `temp_celsius{instance="",job="a",room="a"} 2`} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %s:\n%s", want, body)
		}
	}
}

func TestOTLPRefusesOtherMediaTypesWith415NamingBoth(t *testing.T) {
	h := otlpTestHandler(t, Options{})
	body := encodeOTLP(t, otlpMetricsRequest(1, "a"), otlp.Protobuf)
	for _, ct := range []string{"", "text/plain", "application/protobuf", "application/x-protobuf; charset"} {
		w := do(t, h, http.MethodPost, "/otlp/v1/metrics", body, map[string]string{"Content-Type": ct})
		if w.Code != http.StatusUnsupportedMediaType {
			t.Errorf("Content-Type %q: %d, want 415", ct, w.Code)
			continue
		}
		_, msg := rpcStatus(t, w, otlp.Protobuf)
		if !strings.Contains(msg, "application/x-protobuf") || !strings.Contains(msg, "application/json") {
			t.Errorf("Content-Type %q: reason %q names not both media types", ct, msg)
		}
	}
	for _, ct := range []string{"Application/X-Protobuf", "application/x-protobuf; charset=utf-8; a=b"} {
		if w := do(t, h, http.MethodPost, "/otlp/v1/metrics", body, map[string]string{"Content-Type": ct}); w.Code != http.StatusOK {
			t.Errorf("Content-Type %q: %d %q, want 200", ct, w.Code, w.Body)
		}
	}
	if w := do(t, h, http.MethodPost, "/otlp/v1/metrics", encodeOTLP(t, otlpMetricsRequest(1, "a"), otlp.JSON), map[string]string{"Content-Type": "application/json; charset=utf-8"}); w.Code != http.StatusOK {
		t.Errorf("JSON with a charset: %d %q, want 200", w.Code, w.Body)
	}
}

func TestOTLPRefusesUndecodableBodiesWith400AndAStatusInTheirEncoding(t *testing.T) {
	h := otlpTestHandler(t, Options{})
	pb := encodeOTLP(t, otlpMetricsRequest(1, "a"), otlp.Protobuf)
	for _, tc := range []struct {
		name string
		enc  otlp.Encoding
		body []byte
	}{
		{"truncated protobuf", otlp.Protobuf, pb[:len(pb)-3]},
		{"malformed JSON", otlp.JSON, []byte(`{"resourceMetrics":[{"resource":`)},
		{"JSON of the wrong shape", otlp.JSON, []byte(`{"resourceMetrics":"x"}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(t, h, http.MethodPost, "/otlp/v1/metrics", tc.body, map[string]string{"Content-Type": tc.enc.MediaType()})
			if w.Code != http.StatusBadRequest {
				t.Fatalf("answer %d, want 400", w.Code)
			}
			if code, msg := rpcStatus(t, w, tc.enc); code != otlp.CodeInvalidArgument || msg == "" {
				t.Errorf("status code %d message %q, want 3 and a reason", code, msg)
			}
		})
	}
	if body := scrapeText(t, h); strings.Contains(body, "temp_celsius") {
		t.Errorf("a refused request stored something:\n%s", body)
	}
}

func TestOTLPStopsAGzipBombAtTheBodyLimitWith413(t *testing.T) {
	h := otlpTestHandler(t, Options{MaxBodyBytes: 1 << 10})
	md := otlpMetricsRequest(1, strings.Repeat("x", 4<<10))
	w := do(t, h, http.MethodPost, "/otlp/v1/metrics", gzipped(string(encodeOTLP(t, md, otlp.Protobuf))),
		map[string]string{"Content-Type": otlp.ProtobufMediaType, "Content-Encoding": "gzip"})
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("answer %d, want 413", w.Code)
	}
	small := gzipped(string(encodeOTLP(t, otlpMetricsRequest(1, "a"), otlp.Protobuf)))
	w = do(t, h, http.MethodPost, "/otlp/v1/metrics", small, map[string]string{"Content-Type": otlp.ProtobufMediaType, "Content-Encoding": "gzip"})
	exportResponse(t, w, otlp.Protobuf)
}

func TestOTLPReportsRefusedPointsInPartialSuccess(t *testing.T) {
	h := otlpTestHandler(t, Options{})
	md := otlpMetricsRequest(1, "a")
	hist := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().AppendEmpty()
	hist.SetName("latency")
	hist.SetEmptyHistogram().DataPoints().AppendEmpty()
	for _, enc := range []otlp.Encoding{otlp.Protobuf, otlp.JSON} {
		ps := exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", md, enc), enc).PartialSuccess()
		if ps.RejectedDataPoints() != 1 || !strings.Contains(ps.ErrorMessage(), "gauges and sums only") {
			t.Errorf("%s: partial_success %d %q, want 1 and the reason", enc.MediaType(), ps.RejectedDataPoints(), ps.ErrorMessage())
		}
	}
}

func TestOTLPGroupRefusedByTheStoreIsReportedAndTheOthersStored(t *testing.T) {
	h := otlpTestHandler(t, Options{})
	// temp_celsius is a counter in job c: the same name as a gauge in
	// another group is inconsistent.
	if w := do(t, h, http.MethodPut, "/metrics/job/c", []byte("# TYPE temp_celsius counter\ntemp_celsius 1\n"), nil); w.Code != http.StatusOK {
		t.Fatalf("push: %d %s", w.Code, w.Body)
	}
	md := otlpMetricsRequest(1, "a")
	other := pmetric.NewMetrics()
	rm := other.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "b")
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("fine")
	m.SetEmptyGauge().DataPoints().AppendEmpty().SetDoubleValue(7)
	other.ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())

	ps := exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", md, otlp.Protobuf), otlp.Protobuf).PartialSuccess()
	if ps.RejectedDataPoints() != 2 || !strings.Contains(ps.ErrorMessage(), `job="a"`) {
		t.Errorf("partial_success %d %q, want job a's 2 points", ps.RejectedDataPoints(), ps.ErrorMessage())
	}
	if body := scrapeText(t, h); !strings.Contains(body, `fine{instance="",job="b"} 7`) {
		t.Errorf("job b not stored:\n%s", body)
	}

	w := postOTLP(t, h, "/otlp/v1/metrics", otlpMetricsRequest(1, "a"), otlp.JSON)
	if w.Code != http.StatusBadRequest {
		t.Fatalf("every group refused: %d, want 400", w.Code)
	}
	if code, msg := rpcStatus(t, w, otlp.JSON); code != otlp.CodeInvalidArgument || !strings.Contains(msg, "temp_celsius") {
		t.Errorf("status %d %q, want 3 naming the conflict", code, msg)
	}
}

func TestOTLPGroupingPathRoutesTakeTheURLsLabels(t *testing.T) {
	h := otlpTestHandler(t, Options{RoutePrefix: "/p"})
	b64 := base64.RawURLEncoding.EncodeToString([]byte("x/y"))
	for target, want := range map[string]string{
		"/p/otlp/job/j/instance/i/v1/metrics":       `temp_celsius{instance="i",job="j",room="a"} 1`,
		"/p/otlp/job@base64/" + b64 + "/v1/metrics": `temp_celsius{instance="",job="x/y",room="a"} 1`,
		"/p/api/v1/otlp/v1/metrics":                 `temp_celsius{instance="",job="svc",room="a"} 1`,
		"/p/otlp/v1/metrics":                        `temp_celsius{instance="",job="svc",room="a"} 1`,
	} {
		w := postOTLP(t, h, target, otlpMetricsRequest(1, "svc"), otlp.Protobuf)
		exportResponse(t, w, otlp.Protobuf)
		w = do(t, h, http.MethodGet, "/p/metrics", nil, nil)
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("%s: scrape lacks %s:\n%s", target, want, w.Body)
		}
	}
	if w := postOTLP(t, h, "/p/otlp/job/j/odd/v1/metrics", otlpMetricsRequest(1, "svc"), otlp.Protobuf); w.Code != http.StatusBadRequest {
		t.Errorf("an odd grouping path: %d, want 400", w.Code)
	}
	for _, target := range []string{"/otlp/v1/metrics", "/p/otlp/job/j/v1/metrics/x", "/p/otlp/job/v1/metrics"} {
		if w := postOTLP(t, h, target, otlpMetricsRequest(1, "svc"), otlp.Protobuf); w.Code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", target, w.Code)
		}
	}
	if w := do(t, h, http.MethodGet, "/p/otlp/v1/metrics", nil, nil); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", w.Code)
	}
}

func TestOTLPRoutesAreWritesTheForwarderSendsToTheLeader(t *testing.T) {
	h := otlpTestHandler(t, Options{RoutePrefix: "/p"})
	for _, target := range []string{"/p/otlp/v1/metrics", "/p/api/v1/otlp/v1/metrics", "/p/otlp/job/j/v1/metrics"} {
		r := httptest.NewRequest(http.MethodPost, target, nil)
		if got := h.writeHandler(r); got != "otlp" {
			t.Errorf("%s: write handler %q, want otlp", target, got)
		}
	}
}

func TestOTLPChecksEveryGroupAgainstTheCredential(t *testing.T) {
	h := accessTestHandler(t, func(o *Options) { o.OTLP.Translate = fakeTranslate })
	post := func(md pmetric.Metrics, target string, auth bool) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, target, bytes.NewReader(encodeOTLP(t, md, otlp.Protobuf)))
		r.Header.Set("Content-Type", otlp.ProtobufMediaType)
		if auth {
			r.SetBasicAuth("pusher", "pw")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := post(otlpMetricsRequest(1, "a"), "/otlp/v1/metrics", true); w.Code != http.StatusOK {
		t.Errorf("group a: %d %q, want 200", w.Code, w.Body)
	}
	if w := post(otlpMetricsRequest(1, "a"), "/otlp/v1/metrics", false); w.Code != http.StatusUnauthorized {
		t.Errorf("no credential: %d, want 401", w.Code)
	}
	w := post(otlpMetricsRequest(2, "a", "b"), "/otlp/v1/metrics", true)
	if w.Code != http.StatusForbidden {
		t.Fatalf("groups a and b: %d, want 403", w.Code)
	}
	if code, msg := rpcStatus(t, w, otlp.Protobuf); code != otlp.CodePermissionDenied || !strings.Contains(msg, `job="b"`) {
		t.Errorf("status %d %q, want 7 naming group b", code, msg)
	}
	if w := post(otlpMetricsRequest(1, "a"), "/otlp/job/b/v1/metrics", true); w.Code != http.StatusForbidden {
		t.Errorf("URL group b: %d, want 403", w.Code)
	}
	r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	r.Header.Set("Authorization", "Bearer reader")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if !strings.Contains(rec.Body.String(), `temp_celsius{instance="",job="a",room="a"} 1`) {
		t.Errorf("the refused request changed group a:\n%s", rec.Body)
	}
}

func TestOTLPCountsRequestsPointsAndRefusals(t *testing.T) {
	h := otlpTestHandler(t, Options{})
	exportResponse(t, postOTLP(t, h, "/otlp/v1/metrics", otlpMetricsRequest(1, "a"), otlp.Protobuf), otlp.Protobuf)
	do(t, h, http.MethodPost, "/otlp/v1/metrics", []byte("x"), map[string]string{"Content-Type": "text/plain"})
	// A request whose one point the translation refuses: nothing stored.
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "a")
	rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetEmptyHistogram().DataPoints().AppendEmpty()
	if w := postOTLP(t, h, "/otlp/v1/metrics", md, otlp.Protobuf); w.Code != http.StatusBadRequest {
		t.Errorf("a request of refused points alone: %d, want 400", w.Code)
	}
	body := scrapeText(t, h)
	for _, want := range []string{
		`pushgate_otlp_requests_total{outcome="success"} 1`,
		`pushgate_otlp_requests_total{outcome="refused"} 2`,
		`pushgate_otlp_points_total{result="accepted"} 2`,
		`pushgate_otlp_points_total{result="rejected"} 1`,
		`pushgate_rejected_requests_total{handler="otlp",reason="points"} 1`,
		`pushgate_rejected_requests_total{handler="otlp",reason="media_type"} 1`,
		`pushgateway_http_requests_total{code="200",handler="otlp",method="post"} 1`,
		`pushgateway_http_push_duration_seconds_count{method="post"} 3`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("own metrics lack %s", want)
		}
	}
}
