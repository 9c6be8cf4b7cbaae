package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// curl runs curl with args and stdin, and returns the HTTP status and the
// response body. The body is written to a file so it never mixes with the
// status that -w prints.
func curl(t *testing.T, stdin string, args ...string) (int, string) {
	t.Helper()
	bin := requireTool(t, "curl")
	out := t.TempDir() + "/body"
	full := append([]string{"-sS", "-o", out, "-w", "%{http_code}"}, args...)
	cmd := exec.Command(bin, full...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("curl %v: %v\n%s", args, err, stderr.String())
	}
	code, err := strconv.Atoi(strings.TrimSpace(stdout.String()))
	if err != nil {
		t.Fatalf("curl %v: status %q", args, stdout.String())
	}
	body, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("curl %v: %v", args, err)
	}
	return code, string(body)
}

// TestCurlSpecificationExample runs the specification's example: plain
// "<metric_name> <value>" lines sent with curl --data-binary @- to
// /metrics/job/<job>/instance/<instance>, then a DELETE with curl -X DELETE.
func TestCurlSpecificationExample(t *testing.T) {
	g := startGateway(t)
	u := g.url("/metrics/job/some_job/instance/some_instance")
	code, body := curl(t, "some_metric 3.14\nanother_metric 2398\n", "--data-binary", "@-", u)
	if code != 200 || body != "" {
		t.Fatalf("push: %d %q, want 200 with an empty body", code, body)
	}
	key := lbl("job", "some_job", "instance", "some_instance")
	mfs := scrape(t, g)
	mfs.requireValue(t, "some_metric", key, 3.14)
	mfs.requireValue(t, "another_metric", key, 2398)

	// A second POST replaces only the families in its body ...
	code, body = curl(t, "some_metric 6.28\n", "--data-binary", "@-", u)
	if code != 200 {
		t.Fatalf("second push: %d %q", code, body)
	}
	mfs = scrape(t, g)
	mfs.requireValue(t, "some_metric", key, 6.28)
	mfs.requireValue(t, "another_metric", key, 2398)

	// ... and a PUT replaces the whole group.
	code, body = curl(t, "some_metric 1\n", "-X", "PUT", "--data-binary", "@-", u)
	if code != 200 {
		t.Fatalf("PUT: %d %q", code, body)
	}
	mfs = scrape(t, g)
	mfs.requireValue(t, "some_metric", key, 1)
	mfs.requireAbsent(t, "another_metric", key)

	code, body = curl(t, "", "-X", "DELETE", u)
	if code != 202 || body != "" {
		t.Fatalf("delete: %d %q, want 202 with an empty body", code, body)
	}
	eventually(t, waitTimeout, func() error {
		if len(scrape(t, g).series("some_metric", key)) > 0 {
			return errorf("some_metric still present after DELETE")
		}
		return nil
	})
	// DELETE of an absent group is 202 too.
	if code, body = curl(t, "", "-X", "DELETE", u); code != 202 {
		t.Fatalf("delete of an absent group: %d %q, want 202", code, body)
	}
}

// TestCurlRejections sends malformed paths and bodies with curl: each gets
// 400 with a one-line reason naming the bad part, and the store is unchanged.
func TestCurlRejections(t *testing.T) {
	g := startGateway(t)
	pushText(t, g, "PUT", "/metrics/job/keep/instance/k1", "kept_metric 1\n")
	before := scrape(t, g).pushedDump()

	for _, tc := range []struct {
		name   string
		path   string
		body   string
		method string
		reason string // a substring the one-line reason must contain
	}{
		{name: "odd number of path components", path: "/metrics/job/j/instance", body: "m 1\n", reason: "instance"},
		{name: "label name with a dash", path: "/metrics/job/j/a-b/v", body: "m 1\n", reason: "a-b"},
		{name: "reserved label name", path: "/metrics/job/j/__res/v", body: "m 1\n", reason: "__res"},
		{name: "empty base64 job", path: "/metrics/job@base64/=", body: "m 1\n", reason: "job"},
		{name: "bad base64 label value", path: "/metrics/job/j/l@base64/!!!", body: "m 1\n", reason: "l"},
		{name: "value is not a number", path: "/metrics/job/j/instance/i", body: "bad_metric line\n", reason: "line"},
		{name: "invalid metric name", path: "/metrics/job/j/instance/i", body: "a.b 1\n", reason: "b"},
		{name: "unknown TYPE", path: "/metrics/job/j/instance/i", body: "# TYPE m nonsense\nm 1\n", reason: "nonsense"},
		{name: "missing final newline", path: "/metrics/job/j/instance/i", body: "m 1", reason: ""},
		{name: "bad path on DELETE", path: "/metrics/job/j/instance", method: "DELETE", reason: "instance"},
		{name: "bad path on POST", path: "/metrics/job/j/a-b/v", method: "POST", body: "m 1\n", reason: "a-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = "PUT"
			}
			args := []string{"-X", method, g.url(tc.path)}
			if method != "DELETE" {
				args = append([]string{"--data-binary", "@-"}, args...)
			}
			code, body := curl(t, tc.body, args...)
			if code != 400 {
				t.Fatalf("got %d %q, want 400", code, body)
			}
			requireOneLine(t, response{Status: code, Body: []byte(body)})
			if !strings.Contains(body, tc.reason) {
				t.Fatalf("reason %q does not name %q", body, tc.reason)
			}
			if after := scrape(t, g).pushedDump(); after != before {
				t.Fatalf("store changed by a rejected request:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}

	// A sample timestamp passes the parser but is refused by the store: 400,
	// and no sample of the body is stored.
	code, body := curl(t, "ts_metric 1 1700000000000\n", "-X", "PUT", "--data-binary", "@-", g.url("/metrics/job/ts/instance/i"))
	if code != 400 {
		t.Fatalf("timestamped push: %d %q, want 400", code, body)
	}
	requireOneLine(t, response{Status: code, Body: []byte(body)})
	mfs := scrape(t, g)
	mfs.requireAbsent(t, "ts_metric", lbl("job", "ts"))
	mfs.requireValue(t, "kept_metric", lbl("job", "keep", "instance", "k1"), 1)
}
