package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/store"
)

// newTestHandler returns a handler over an empty memory store.
func newTestHandler(t *testing.T, opts Options) (*Handler, *store.Store) {
	t.Helper()
	st := store.New(store.Options{UTF8Names: opts.UTF8Names})
	h, err := New(st, prometheus.NewRegistry(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return h, st
}

// do sends one request through the handler.
func do(t *testing.T, h http.Handler, method, target string, body []byte, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, target, bytes.NewReader(body))
	for k, v := range header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// scrapeText returns the text scrape of the handler.
func scrapeText(t *testing.T, h http.Handler) string {
	t.Helper()
	w := do(t, h, http.MethodGet, "/metrics", nil, nil)
	if w.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", w.Code, w.Body)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	if _, err := parser.TextToMetricFamilies(bytes.NewReader(w.Body.Bytes())); err != nil {
		t.Fatalf("scrape does not parse: %v", err)
	}
	return w.Body.String()
}

func gzipped(s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return b.Bytes()
}

func snappyFramed(s string) []byte {
	var b bytes.Buffer
	zw := s2.NewWriter(&b, s2.WriterSnappyCompat())
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return b.Bytes()
}

func TestPushAnswers(t *testing.T) {
	cases := []struct {
		name     string
		method   string
		path     string
		body     []byte
		header   map[string]string
		wantCode int
		wantBody string // substring of a one-line reason
	}{
		{"a text PUT is stored with 200", http.MethodPut, "/metrics/job/j/instance/i", []byte("m 1\n"), nil, 200, ""},
		{"a POST without Content-Type is stored with 200", http.MethodPost, "/metrics/job/j", []byte("m 1\n"), nil, 200, ""},
		{"a gzip body is decompressed", http.MethodPut, "/metrics/job/j", gzipped("m 1\n"), map[string]string{"Content-Encoding": "gzip"}, 200, ""},
		{"a framed snappy body is decompressed", http.MethodPut, "/metrics/job/j", snappyFramed("m 1\n"), map[string]string{"Content-Encoding": "snappy"}, 200, ""},
		{"a DELETE of an absent group answers 202", http.MethodDelete, "/metrics/job/nothing", nil, nil, 202, ""},
		{"an odd label path is a 400", http.MethodPut, "/metrics/job/j/a", []byte("m 1\n"), nil, 400, "odd number of components"},
		{"an empty job is a 400", http.MethodPut, "/metrics/job@base64/=", []byte("m 1\n"), nil, 400, "job name is required"},
		{"a __ label name is a 400", http.MethodPut, "/metrics/job/j/__x/y", []byte("m 1\n"), nil, 400, "improper label name"},
		{"bad base64 is a 400", http.MethodPut, "/metrics/job/j/a@base64/%21%21", []byte("m 1\n"), nil, 400, "invalid base64"},
		{"a body without a final newline is a 400", http.MethodPut, "/metrics/job/j", []byte("m 1"), nil, 400, "text format parsing error"},
		{"CRLF line endings are a 400", http.MethodPut, "/metrics/job/j", []byte("m 1\r\n"), nil, 400, "text format parsing error"},
		{"a malformed value is a 400", http.MethodPut, "/metrics/job/j", []byte("m x\n"), nil, 400, "expected float"},
		{"a sample timestamp is a 400", http.MethodPut, "/metrics/job/j", []byte("m 1 1000\n"), nil, 400, "timestamps"},
		{"a broken gzip header is a 400", http.MethodPut, "/metrics/job/j", []byte("not gzip"), map[string]string{"Content-Encoding": "gzip"}, 400, "invalid gzip body"},
		{"corrupt snappy is a 400", http.MethodPut, "/metrics/job/j", []byte("not snappy at all"), map[string]string{"Content-Encoding": "snappy"}, 400, ""},
		{"an unknown Content-Encoding is a 415", http.MethodPut, "/metrics/job/j", []byte("m 1\n"), map[string]string{"Content-Encoding": "zstd"}, 415, "unsupported Content-Encoding"},
		{"a bad protobuf frame is a 400", http.MethodPut, "/metrics/job/j", []byte{0x05, 0x01}, map[string]string{"Content-Type": "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"}, 400, ""},
		{"a GET on a push path is a 405", http.MethodGet, "/metrics/job/j", nil, nil, 405, "not allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newTestHandler(t, Options{MaxBodyBytes: 1 << 20})
			w := do(t, h, tc.method, tc.path, tc.body, tc.header)
			if w.Code != tc.wantCode {
				t.Fatalf("code = %d (%q), want %d", w.Code, w.Body.String(), tc.wantCode)
			}
			body := strings.TrimSuffix(w.Body.String(), "\n")
			if tc.wantCode >= 400 {
				if strings.Contains(body, "\n") || body == "" {
					t.Errorf("reason is not one non-empty line: %q", body)
				}
				if !strings.Contains(body, tc.wantBody) {
					t.Errorf("reason %q does not contain %q", body, tc.wantBody)
				}
				if strings.Contains(scrapeText(t, h), `job="j"`) && !strings.Contains(tc.wantBody, "timestamps") {
					t.Errorf("a rejected request stored something")
				}
				if !strings.Contains(scrapeText(t, h), "pushgate_rejected_requests_total") {
					t.Errorf("the rejection was not counted")
				}
			} else if body != "" {
				t.Errorf("success body = %q, want empty", body)
			}
		})
	}
}

func TestPushBodyLimitAnswers413AndStopsAGzipBomb(t *testing.T) {
	h, _ := newTestHandler(t, Options{MaxBodyBytes: 1024})
	bomb := gzipped(strings.Repeat("m 1\n", 1<<20))
	w := do(t, h, http.MethodPut, "/metrics/job/j", bomb, map[string]string{"Content-Encoding": "gzip"})
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("code = %d %q, want 413", w.Code, w.Body)
	}
}

func TestDisabledConsistencyCheckAnswers202(t *testing.T) {
	h, _ := newTestHandler(t, Options{DisableConsistencyCheck: true})
	if w := do(t, h, http.MethodPut, "/metrics/job/j", []byte("m 1\n"), nil); w.Code != http.StatusAccepted {
		t.Fatalf("code = %d, want 202", w.Code)
	}
}

func TestRoutePrefixMovesEveryRoute(t *testing.T) {
	h, _ := newTestHandler(t, Options{RoutePrefix: "/pg"})
	if w := do(t, h, http.MethodPut, "/pg/metrics/job/j", []byte("m 1\n"), nil); w.Code != 200 {
		t.Fatalf("prefixed push: %d", w.Code)
	}
	if w := do(t, h, http.MethodGet, "/pg/metrics", nil, nil); w.Code != 200 || !strings.Contains(w.Body.String(), `m{instance="",job="j"} 1`) {
		t.Fatalf("prefixed scrape: %d", w.Code)
	}
	if w := do(t, h, http.MethodGet, "/metrics", nil, nil); w.Code != 404 {
		t.Fatalf("unprefixed scrape: %d, want 404", w.Code)
	}
	if w := do(t, h, http.MethodGet, "/pg/-/healthy", nil, nil); w.Code != 200 {
		t.Fatalf("prefixed health: %d", w.Code)
	}
}

func TestScrapeNegotiatesAndCompresses(t *testing.T) {
	h, _ := newTestHandler(t, Options{})
	do(t, h, http.MethodPut, "/metrics/job/j", []byte("m 1\n"), nil)
	w := do(t, h, http.MethodGet, "/metrics", nil, map[string]string{
		"Accept":          "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8",
		"Accept-Encoding": "gzip",
	})
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text; version=1.0.0") {
		t.Fatalf("Content-Type = %q", ct)
	}
	zr, err := gzip.NewReader(w.Body)
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	text, _ := io.ReadAll(zr)
	if !strings.HasSuffix(string(text), "# EOF\n") {
		t.Fatalf("OpenMetrics output does not end with # EOF")
	}
	if w := do(t, h, http.MethodHead, "/metrics", nil, nil); w.Code != 200 || w.Body.Len() != 0 || w.Header().Get("Content-Type") == "" {
		t.Fatalf("HEAD: %d, %d bytes, Content-Type %q", w.Code, w.Body.Len(), w.Header().Get("Content-Type"))
	}
}

func TestLifecycleEndpoints(t *testing.T) {
	h, _ := newTestHandler(t, Options{})
	if w := do(t, h, http.MethodPut, "/-/quit", nil, nil); w.Code != http.StatusForbidden {
		t.Errorf("quit without the flag: %d, want 403", w.Code)
	}
	if w := do(t, h, http.MethodGet, "/-/quit", nil, nil); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET quit: %d, want 405", w.Code)
	}
	loading, _ := newTestHandler(t, Options{Ready: func() bool { return false }})
	if w := do(t, loading, http.MethodGet, "/-/ready", nil, nil); w.Code != http.StatusServiceUnavailable {
		t.Errorf("ready while loading: %d, want 503", w.Code)
	}
	if w := do(t, loading, http.MethodGet, "/-/healthy", nil, nil); w.Code != http.StatusOK {
		t.Errorf("healthy while loading: %d, want 200", w.Code)
	}
	if w := do(t, loading, http.MethodPut, "/metrics/job/j", []byte("m 1\n"), nil); w.Code != http.StatusServiceUnavailable {
		t.Errorf("push while loading: %d, want 503", w.Code)
	}
}

func TestOtherMethodsOnAGroupPathAnswer405WithTheAllowedOnes(t *testing.T) {
	h, st := newTestHandler(t, Options{})
	do(t, h, http.MethodPut, "/metrics/job/j", []byte("g 1\n"), nil)
	want := "DELETE, POST, PUT, OPTIONS"
	for _, method := range []string{http.MethodGet, http.MethodPatch} {
		rec := do(t, h, method, "/metrics/job/j", []byte("g 2\n"), nil)
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != want {
			t.Errorf("%s = %d, Allow %q; want 405, Allow %q", method, rec.Code, rec.Header().Get("Allow"), want)
		}
		if !strings.Contains(rec.Body.String(), method) {
			t.Errorf("%s: the reason %q does not name the method", method, rec.Body.String())
		}
	}
	if rec := do(t, h, http.MethodOptions, "/metrics/job/j", nil, nil); rec.Code != http.StatusOK || rec.Header().Get("Allow") != want {
		t.Errorf("OPTIONS = %d, Allow %q; want 200, Allow %q", rec.Code, rec.Header().Get("Allow"), want)
	}
	if g := st.Group(groupkey.New(map[string]string{"job": "j"})); g == nil || g.PushTime().IsZero() {
		t.Fatal("the group pushed before is gone")
	}
	if got := scrapeText(t, h); !strings.Contains(got, `pushgate_rejected_requests_total{handler="push",reason="method"} 2`) {
		t.Errorf("the two refused methods are not counted:\n%s", got)
	}
}
