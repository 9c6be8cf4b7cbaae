package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// otlpExchange is one OTLP request and the gateway's answer to it.
type otlpExchange struct {
	path, contentType, contentEncoding string
	body                               []byte
	status                             int
	respType                           string
	respBody                           []byte
	// lost is set when the recorder forwarded the request but answered
	// the SDK 503 instead of the gateway's answer.
	lost bool
}

// otlpRecorder is a loopback proxy in front of a gateway that keeps every
// request an SDK sends through it, with the answer: the test replays a
// captured request byte for byte. It can also lose answers: forward a
// request, then tell the SDK 503 (as a gateway whose commit outcome was
// unknown, or a connection cut after the commit, would), so that the SDK
// sends again what the gateway already has.
type otlpRecorder struct {
	*httptest.Server
	target    string
	mu        sync.Mutex
	exchanges []otlpExchange
	lose      int
}

// startOTLPRecorder starts a recorder forwarding to the gateway at target.
func startOTLPRecorder(t *testing.T, target string) *otlpRecorder {
	t.Helper()
	rec := &otlpRecorder{target: target}
	rec.Server = httptest.NewServer(http.HandlerFunc(rec.serve))
	t.Cleanup(rec.Close)
	return rec
}

func (rec *otlpRecorder) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	x := otlpExchange{
		path:            r.URL.Path,
		contentType:     r.Header.Get("Content-Type"),
		contentEncoding: r.Header.Get("Content-Encoding"),
		body:            body,
	}
	header := []string{"Content-Type", x.contentType}
	if x.contentEncoding != "" {
		header = append(header, "Content-Encoding", x.contentEncoding)
	}
	resp, err := doRequest(r.Context(), r.Method, rec.target+r.URL.RequestURI(), body, header...)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	x.status, x.respType, x.respBody = resp.Status, resp.Header.Get("Content-Type"), resp.Body
	rec.mu.Lock()
	if rec.lose > 0 {
		rec.lose--
		x.lost = true
	}
	rec.exchanges = append(rec.exchanges, x)
	rec.mu.Unlock()
	if x.lost {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "the answer was lost on its way back", http.StatusServiceUnavailable)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

// loseNext makes the recorder lose the gateway's answers to the next n
// requests.
func (rec *otlpRecorder) loseNext(n int) {
	rec.mu.Lock()
	rec.lose = n
	rec.mu.Unlock()
}

// take returns the exchanges recorded so far and forgets them.
func (rec *otlpRecorder) take() []otlpExchange {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	x := rec.exchanges
	rec.exchanges = nil
	return x
}

// curlReplay POSTs x's request with the curl binary, with x's Content-Type
// and Content-Encoding, to u, and returns the exchange with curl's answer.
func curlReplay(t *testing.T, curlBin, u string, x otlpExchange) otlpExchange {
	t.Helper()
	dir := t.TempDir()
	reqFile, respFile := filepath.Join(dir, "request"), filepath.Join(dir, "response")
	if err := os.WriteFile(reqFile, x.body, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-sS", "-X", "POST", "-o", respFile, "-w", "%{http_code} %{content_type}",
		"-H", "Content-Type: " + x.contentType, "--data-binary", "@" + reqFile}
	if x.contentEncoding != "" {
		args = append(args, "-H", "Content-Encoding: "+x.contentEncoding)
	}
	cmd := exec.Command(curlBin, append(args, u)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("curl %v: %v\n%s", args, err, stderr.String())
	}
	code, ctype, _ := strings.Cut(stdout.String(), " ")
	status, err := strconv.Atoi(code)
	if err != nil {
		t.Fatalf("curl %v: status %q", args, stdout.String())
	}
	body, err := os.ReadFile(respFile)
	if err != nil {
		t.Fatal(err)
	}
	out := x
	out.status, out.respType, out.respBody = status, ctype, body
	return out
}

// deltaPoints is the number of delta points in one export of the variant:
// the counter and the two histograms of the delta variant, none of the
// cumulative one.
func (v otlpVariant) deltaPoints() int64 {
	if v.temporality == "delta" {
		return 3
	}
	return 0
}

// replay POSTs x's request again with curl to the gateway at baseURL and
// requires a 200 whose partial_success refuses exactly the request's delta
// points, their windows being summed already.
func (v otlpVariant) replay(t *testing.T, curlBin, baseURL string, x otlpExchange) {
	t.Helper()
	got := curlReplay(t, curlBin, baseURL+x.path, x)
	if err := got.requireAccepted(v.deltaPoints()); err != nil {
		t.Fatalf("%s: the request replayed with curl to %s: %v\nrequest: %s", v.service(), baseURL, err, x.describeRequest())
	}
}

// replayUntilLeader is replay through a cluster replica while it may have
// no leader: curl is run again, for up to otlpJobTimeout, while the replica
// answers 503.
func (v otlpVariant) replayUntilLeader(t *testing.T, curlBin, baseURL string, x otlpExchange) {
	t.Helper()
	deadline := time.Now().Add(otlpJobTimeout)
	for {
		got := curlReplay(t, curlBin, baseURL+x.path, x)
		if got.status == http.StatusServiceUnavailable && time.Now().Before(deadline) {
			time.Sleep(250 * time.Millisecond)
			continue
		}
		if err := got.requireAccepted(v.deltaPoints()); err != nil {
			t.Fatalf("%s: the request replayed with curl to %s: %v\nrequest: %s", v.service(), baseURL, err, x.describeRequest())
		}
		return
	}
}

// requireAccepted checks that the answer is a 200 ExportMetricsServiceResponse
// in the request's encoding whose partial_success rejects exactly rejected
// points and, when it rejects any, names the overlap of their windows.
func (x otlpExchange) requireAccepted(rejected int64) error {
	if x.status != http.StatusOK {
		return fmt.Errorf("answer %d %s %q, want 200", x.status, x.respType, x.respBody)
	}
	reqType, _, _ := mime.ParseMediaType(x.contentType)
	respType, _, err := mime.ParseMediaType(x.respType)
	if err != nil || respType != reqType {
		return fmt.Errorf("answer's Content-Type %q, want the request's %q", x.respType, reqType)
	}
	resp := pmetricotlp.NewExportResponse()
	if respType == "application/json" {
		err = resp.UnmarshalJSON(x.respBody)
	} else {
		err = resp.UnmarshalProto(x.respBody)
	}
	if err != nil {
		return fmt.Errorf("answer %q is not an ExportMetricsServiceResponse: %w", x.respBody, err)
	}
	ps := resp.PartialSuccess()
	if ps.RejectedDataPoints() != rejected {
		return fmt.Errorf("partial_success rejects %d points (%q), want %d", ps.RejectedDataPoints(), ps.ErrorMessage(), rejected)
	}
	if rejected > 0 && !strings.Contains(strings.ToLower(ps.ErrorMessage()), "overlap") {
		return fmt.Errorf("partial_success message %q does not name the overlap", ps.ErrorMessage())
	}
	return nil
}

// describeRequest renders the request for a failure report: its headers,
// and the body as JSON (decoded and re-encoded by pdata) with the raw bytes
// in base64, so that it can be replayed.
func (x otlpExchange) describeRequest() string {
	req := pmetricotlp.NewExportRequest()
	body, err := x.plainBody()
	if err == nil {
		if mt, _, _ := mime.ParseMediaType(x.contentType); mt == "application/json" {
			err = req.UnmarshalJSON(body)
		} else {
			err = req.UnmarshalProto(body)
		}
	}
	decoded := "(not decodable: " + fmt.Sprint(err) + ")"
	if err == nil {
		if b, err := req.MarshalJSON(); err == nil {
			decoded = string(b)
		}
	}
	return fmt.Sprintf("POST %s Content-Type: %s Content-Encoding: %q (%d bytes)\nas JSON: %s\nbase64: %s",
		x.path, x.contentType, x.contentEncoding, len(x.body), decoded, base64.StdEncoding.EncodeToString(x.body))
}

// plainBody returns the request body without its Content-Encoding.
func (x otlpExchange) plainBody() ([]byte, error) {
	switch x.contentEncoding {
	case "", "identity":
		return x.body, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(x.body))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	default:
		return nil, fmt.Errorf("Content-Encoding %q", x.contentEncoding)
	}
}
