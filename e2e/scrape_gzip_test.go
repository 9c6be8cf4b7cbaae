package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pushedLines keeps the lines of a text scrape that belong to the test's
// pushed families, dropping the gateway's own metrics, whose values change
// between two scrapes.
func pushedLines(body string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(body, "\n") {
		name := strings.TrimPrefix(strings.TrimPrefix(line, "# HELP "), "# TYPE ")
		if strings.HasPrefix(name, "gz_") || strings.HasPrefix(name, "push_") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// TestGzipScrapeDecodesLikeThePlainScrape scrapes the gateway gzip-compressed
// (the body is assembled from cached per-family deflate segments) and checks
// that Go's compress/gzip (through the harness), gzip -dc, Python's gzip
// module and curl --compressed all decode it to the plain scrape's bytes,
// both on the first gzip scrape (segments built) and the next (reused).
func TestGzipScrapeDecodesLikeThePlainScrape(t *testing.T) {
	g := startGateway(t)
	for i := 0; i < 20; i++ {
		body := fmt.Sprintf("# HELP gz_total A counter with \\\\ and \\n.\n# TYPE gz_total counter\ngz_total{path=\"/a\\\"b\"} %d\ngz_gauge{le=\"x\"} %d.5\n", i, i)
		pushText(t, g, http.MethodPut, fmt.Sprintf("/metrics/job/gz/instance/i%d", i), body)
	}
	for _, accept := range []string{"text/plain;version=0.0.4", "application/openmetrics-text;version=1.0.0"} {
		t.Run(accept, func(t *testing.T) {
			plain := mustStatus(t, http.StatusOK, http.MethodGet, g.url("/metrics"), nil, "Accept", accept)
			want := pushedLines(string(plain.Body))
			if strings.Count(want, "gz_total{") != 20 {
				t.Fatalf("plain scrape holds %d gz_total series, want 20:\n%s", strings.Count(want, "gz_total{"), want)
			}
			for _, pass := range []string{"cold", "cached"} {
				r := mustStatus(t, http.StatusOK, http.MethodGet, g.url("/metrics"), nil, "Accept", accept, "Accept-Encoding", "gzip")
				if r.Header.Get("Content-Encoding") != "gzip" {
					t.Fatalf("Content-Encoding %q, want gzip", r.Header.Get("Content-Encoding"))
				}
				file := filepath.Join(t.TempDir(), "scrape.gz")
				if err := os.WriteFile(file, r.Body, 0o600); err != nil {
					t.Fatal(err)
				}
				decoders := []struct {
					name string
					run  func(t *testing.T) []byte
				}{
					{"gzip -dc", func(t *testing.T) []byte {
						out, err := exec.Command(requireTool(t, "gzip"), "-dc", file).Output()
						if err != nil {
							t.Fatalf("gzip -dc: %v", err)
						}
						return out
					}},
					{"python gzip", func(t *testing.T) []byte {
						out, err := exec.Command(requireTool(t, "/usr/bin/python3"), "-c",
							"import gzip, sys; sys.stdout.buffer.write(gzip.decompress(open(sys.argv[1], 'rb').read()))", file).Output()
						if err != nil {
							t.Fatalf("python3 gzip: %v", err)
						}
						return out
					}},
					{"curl --compressed", func(t *testing.T) []byte {
						code, body := curl(t, "", "--compressed", "-H", "Accept: "+accept, g.url("/metrics"))
						if code != http.StatusOK {
							t.Fatalf("curl: %d", code)
						}
						return []byte(body)
					}},
				}
				for _, d := range decoders {
					t.Run(pass+"/"+d.name, func(t *testing.T) {
						if got := pushedLines(string(d.run(t))); got != want {
							t.Fatalf("decoded body differs from the plain scrape:\ngot  %q\nwant %q", got, want)
						}
					})
				}
			}
			if !bytes.HasSuffix(plain.Body, []byte("\n")) {
				t.Fatalf("plain scrape does not end with a newline")
			}
		})
	}
}

// gunzipScrape returns the body of r, a gzip-compressed scrape, decoded by
// Go's compress/gzip; it fails the test unless r says it is gzip.
func gunzipScrape(t *testing.T, r response) []byte {
	t.Helper()
	if r.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding %q, want gzip", r.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// precompressedBytes returns the gateway's
// pushgate_scrape_precompressed_bytes_total.
func precompressedBytes(t *testing.T, g *gateway) float64 {
	t.Helper()
	return sampleValue(scrape(t, g).require(t, "pushgate_scrape_precompressed_bytes_total", map[string]string{}))
}

// TestGzipScrapesFindBodiesCompressedAhead checks the built binary's
// background precompression: after a first gzip scrape, once the store
// has settled (about a second here), the gateway compresses the pushed
// bodies on its own, counts them, and the next gzip scrape still decodes to
// the plain scrape; with --web.gzip-precompress-cpu=0 it compresses
// nothing ahead.
func TestGzipScrapesFindBodiesCompressedAhead(t *testing.T) {
	for _, cpu := range []string{"0.25", "0"} {
		t.Run("cpu="+cpu, func(t *testing.T) {
			g := startGateway(t, "--web.gzip-precompress-cpu="+cpu)
			for i := 0; i < 20; i++ {
				pushText(t, g, http.MethodPut, fmt.Sprintf("/metrics/job/gz/instance/i%d", i), fmt.Sprintf("gz_total %d\n", i))
			}
			mustStatus(t, http.StatusOK, http.MethodGet, g.url("/metrics"), nil, "Accept-Encoding", "gzip")
			// Bounded wait: a pass every 250 ms, after 1 s of calm; with
			// precompression off, long enough that it would have run.
			wait := 15 * time.Second
			if cpu == "0" {
				wait = 3 * time.Second
			}
			var got float64
			for deadline := time.Now().Add(wait); ; time.Sleep(250 * time.Millisecond) {
				if got = precompressedBytes(t, g); got > 0 || !time.Now().Before(deadline) {
					break
				}
			}
			if (got > 0) != (cpu != "0") {
				t.Fatalf("with --web.gzip-precompress-cpu=%s, %v text bytes were precompressed", cpu, got)
			}
			plain := mustStatus(t, http.StatusOK, http.MethodGet, g.url("/metrics"), nil)
			body := gunzipScrape(t, mustStatus(t, http.StatusOK, http.MethodGet, g.url("/metrics"), nil, "Accept-Encoding", "gzip"))
			if want, have := pushedLines(string(plain.Body)), pushedLines(string(body)); want != have || !strings.Contains(have, "gz_total") {
				t.Fatalf("gzip scrape after precompression decodes to\n%s\nwant\n%s", have, want)
			}
		})
	}
}
