package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// frontDoor is one address in front of the replicas, as a Kubernetes
// Service is: each request goes to the next replica in turn, skipping one
// that cannot be reached or is not ready (503).
type frontDoor struct {
	*httptest.Server
	mu   sync.Mutex
	urls []string
	next int
}

func startFrontDoor(t *testing.T, rs []*replica) *frontDoor {
	t.Helper()
	f := &frontDoor{}
	for _, r := range rs {
		f.urls = append(f.urls, r.URL)
	}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *frontDoor) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	start := f.next
	f.next++
	f.mu.Unlock()
	for i := range f.urls {
		u := f.urls[(start+i)%len(f.urls)]
		req, err := http.NewRequestWithContext(r.Context(), r.Method, u+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			continue
		}
		req.Header = r.Header.Clone()
		resp, err := httpClient.Do(req)
		if err != nil {
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode == http.StatusServiceUnavailable {
			continue
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(b)
		return
	}
	http.Error(w, "no replica answered", http.StatusBadGateway)
}

// addr is the front door's host:port.
func (f *frontDoor) addr() string { return f.Listener.Addr().(*net.TCPAddr).String() }

func testPrometheusThroughOneAddress(t *testing.T, rs []*replica) {
	front := startFrontDoor(t, live(rs))
	p := startPrometheusWithConfig(t, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: pushgate
    honor_labels: true
    static_configs:
      - targets: [%q]
`, front.addr()))
	g := &gateway{URL: front.URL, Addr: front.addr()}
	expect := func(value int) {
		t.Helper()
		want := fmt.Sprintf(`{instance="db",job="backup"} %d`, value)
		eventually(t, promTimeout, func() error {
			res, err := p.query(`cluster_backup_bytes`)
			if err != nil {
				return err
			}
			if got := describe(res); got != want {
				return errorf("cluster_backup_bytes = %s, want %s", got, want)
			}
			res, err = p.query(`up{job="pushgate"}`)
			if err != nil {
				return err
			}
			if got := describe(res); got != fmt.Sprintf(`{instance=%q,job="pushgate"} 1`, front.addr()) {
				return errorf("up = %s", got)
			}
			return nil
		})
	}
	pushText(t, g, http.MethodPut, "/metrics/job/backup/instance/db", "cluster_backup_bytes 1\n")
	expect(1)
	live(rs)[0].kill(t)
	pushText(t, g, http.MethodPut, "/metrics/job/backup/instance/db", "cluster_backup_bytes 2\n")
	expect(2)
}
