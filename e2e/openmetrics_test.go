package e2e

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// pythonOpenMetricsParser parses an OpenMetrics body from stdin with
// prometheus_client's parser, which rejects a family name seen twice, and
// prints the number of families.
const pythonOpenMetricsParser = `
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
print(len(list(text_string_to_metric_families(sys.stdin.read()))))
`

// TestPythonParsesEveryEscapedOpenMetricsScrape scrapes a gateway holding
// UTF-8 names (a ':' in a label name from the body and from the path) in
// OpenMetrics under every escaping to legacy names, and requires Python's
// prometheus_client parser to accept each whole body: every name valid, no
// family name twice (the gateway's own go_memstats_alloc_bytes gauge and
// go_memstats_alloc_bytes_total counter were), the # EOF there.
// (prometheus_client 0.16 cannot parse quoted UTF-8 names, so allow-utf-8 is
// left to the expfmt-based tests.)
func TestPythonParsesEveryEscapedOpenMetricsScrape(t *testing.T) {
	if os.Getenv("PUSHGATE_BINARY") != "" {
		t.Skip("pushgate's OpenMetrics rendering; PUSHGATE_BINARY is set")
	}
	requirePythonClient(t)
	g := startGateway(t, "--push.enable-utf8-names")
	pushText(t, g, http.MethodPut, "/metrics/job/j/U__p_3a_q/v", "m{\"x:y\"=\"1\"} 1\n{\"a.b\",\"ü\"=\"2\"} 2\n")
	for _, esc := range []string{"underscores", "dots", "values"} {
		t.Run(esc, func(t *testing.T) {
			r := mustStatus(t, http.StatusOK, http.MethodGet, g.url("/metrics"), nil,
				"Accept", "application/openmetrics-text;version=1.0.0;escaping="+esc)
			if !bytes.HasSuffix(r.Body, []byte("# EOF\n")) {
				t.Fatalf("no # EOF at the end:\n%s", r.Body)
			}
			cmd := exec.Command(debianPython, "-c", pythonOpenMetricsParser)
			cmd.Stdin = bytes.NewReader(r.Body)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("prometheus_client rejects the scrape: %v\n%s\nbody:\n%s", err, out, r.Body)
			}
			if n := strings.TrimSpace(string(out)); n == "0" {
				t.Fatalf("prometheus_client found no family in\n%s", r.Body)
			}
		})
	}
}
