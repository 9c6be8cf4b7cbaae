package e2e

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// skipForReference skips tests of pushgate-only flags when another binary
// is under test.
func skipForReference(t *testing.T) {
	t.Helper()
	if os.Getenv("PUSHGATE_BINARY") != "" {
		t.Skip("pushgate-only flags; PUSHGATE_BINARY is set")
	}
}

func TestLimitsAnswer400And507AndChangeNothing(t *testing.T) {
	skipForReference(t)
	g := startGateway(t,
		"--push.max-series=3",
		"--push.max-labels-per-series=5",
		"--push.max-label-value-length=16",
		"--store.max-groups=2",
		"--store.max-series=100",
	)
	pushText(t, g, http.MethodPut, "/metrics/job/a", "m{i=\"1\"} 1\n")
	pushText(t, g, http.MethodPut, "/metrics/job/b", "m{i=\"2\"} 1\n")

	cases := []struct {
		name   string
		method string
		path   string
		body   string
		code   int
		reason string // counter label
		text   string // in the one-line answer
	}{
		{"too many series", http.MethodPut, "/metrics/job/a", "m{i=\"1\"} 1\nm{i=\"2\"} 1\nm{i=\"3\"} 1\nm{i=\"4\"} 1\n", 400, "too_many_series", "push has more than 3 series; --push.max-series is 3"},
		{"too many labels", http.MethodPost, "/metrics/job/a", "n{a=\"1\",b=\"2\",c=\"3\",d=\"4\"} 1\n", 400, "too_many_labels", "--push.max-labels-per-series is 5"},
		{"a long value in the body", http.MethodPost, "/metrics/job/a", "n{a=\"" + strings.Repeat("v", 17) + "\"} 1\n", 400, "label_value_too_long", "--push.max-label-value-length is 16"},
		{"a long value in the path", http.MethodPut, "/metrics/job/a/x/" + strings.Repeat("v", 17), "m 1\n", 400, "label_value_too_long", "--push.max-label-value-length is 16"},
		{"a third group", http.MethodPut, "/metrics/job/c", "m{i=\"3\"} 1\n", 507, "store_full_groups", "--store.max-groups is 2"},
	}
	before := scrape(t, g).pushedDump()
	for _, tc := range cases {
		r := do(t, tc.method, g.url(tc.path), []byte(tc.body))
		if r.Status != tc.code || !strings.Contains(string(r.Body), tc.text) {
			t.Errorf("%s: got %s, want %d with %q", tc.name, r, tc.code, tc.text)
		}
		requireOneLine(t, r)
	}
	after := scrape(t, g)
	if dump := after.pushedDump(); dump != before {
		t.Errorf("rejected pushes changed the stored data:\nbefore:\n%s\nafter:\n%s", before, dump)
	}
	counts := map[string]float64{}
	for _, tc := range cases {
		counts[tc.reason]++
	}
	for reason, n := range counts {
		after.requireValue(t, "pushgate_rejected_requests_total", lbl("handler", "push", "reason", reason), n)
	}
	after.requireValue(t, "pushgate_limit", lbl("name", "store.max-groups"), 2)
	after.requireValue(t, "pushgate_groups", lbl(), 2)

	// A full store still takes a replacement of the same size.
	pushText(t, g, http.MethodPut, "/metrics/job/a", "m{i=\"1\"} 5\n")
	// Rejections are logged at warn with the client's address, each reason
	// at most once a second (web/rejectlog.go), and never as errors.
	for reason := range counts {
		if !strings.Contains(g.log(), "reason="+reason) {
			t.Errorf("no log line for reason %s:\n%s", reason, g.logTail(4096))
		}
	}
	for _, line := range strings.Split(g.log(), "\n") {
		if strings.Contains(line, "reason=") && (!strings.Contains(line, `level=warn`) ||
			!strings.Contains(line, `msg="push rejected"`) || !strings.Contains(line, "client=127.0.0.1:")) {
			t.Errorf("a rejection is not logged as a warning naming the client: %s", line)
		}
	}
}

func TestSlowHeaderClientIsDisconnected(t *testing.T) {
	skipForReference(t)
	g := startGateway(t, "--web.read-header-timeout=2s")
	conn, err := net.Dial("tcp", g.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// The server closing the connection ends this read; what it read must
	// not be a response, since the request was never complete.
	closed := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(conn)
		closed <- b
	}()
	request := "GET /-/healthy HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: one-byte-a-second\r\n\r\n"
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	var got []byte
	disconnected := false
send: // bounded: one byte a second, at most len(request) seconds
	for i := 0; i < len(request); i++ {
		if _, err := conn.Write([]byte{request[i]}); err != nil {
			break // closed by the server; the reader reports it below
		}
		select {
		case got = <-closed:
			disconnected = true
			break send
		case <-ticker.C:
		}
	}
	if !disconnected {
		select {
		case got = <-closed:
		case <-time.After(10 * time.Second):
			t.Fatalf("a client sending one header byte per second was not disconnected after %d bytes", len(request))
		}
	}
	// net/http closes the connection, after a 400 when part of the
	// request had arrived.
	if len(got) != 0 {
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(got)), nil)
		if err != nil || resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("the server answered an incomplete request with %q", got)
		}
		resp.Body.Close()
	}
	// The server is fine for everyone else.
	mustStatus(t, http.StatusOK, http.MethodGet, g.url("/-/healthy"), nil)
}

func TestOversizedHeaderIsAnswered431(t *testing.T) {
	skipForReference(t)
	g := startGateway(t, "--web.max-header-bytes=4096")
	// net/http allows 4096 bytes of slack over MaxHeaderBytes.
	r := do(t, http.MethodGet, g.url("/-/healthy"), nil, "X-Padding", strings.Repeat("p", 20000))
	if r.Status != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("got %s, want 431", r)
	}
	mustStatus(t, http.StatusOK, http.MethodGet, g.url("/-/healthy"), nil, "X-Padding", strings.Repeat("p", 1000))
}
