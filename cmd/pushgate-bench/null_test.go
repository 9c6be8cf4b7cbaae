package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestNullServer(t *testing.T) {
	body, err := staticBody("", 100_000)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) > 100_000 || len(body) < 90_000 || body[len(body)-1] != '\n' {
		t.Fatalf("static body is %d bytes, ending %q; want ≤ 100000, ending in a newline", len(body), body[len(body)-1])
	}
	srv, err := newNullServer(body, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}

	req, _ := http.NewRequest(http.MethodPut, ts.URL+"/metrics/job/x", strings.NewReader("a 1\n"))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(got) != 0 {
		t.Errorf("PUT answered %d with %d bytes, want 200 and none", resp.StatusCode, len(got))
	}

	req, _ = http.NewRequest(http.MethodGet, ts.URL+"/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("headers %v, want gzip text/plain 0.0.4", resp.Header)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(plain, body) {
		t.Error("gunzipped scrape differs from the static body")
	}
}

func TestParseProcStatus(t *testing.T) {
	m, err := parseProcStatus([]byte("Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m.rssKiB != 1024 || m.hwmKiB != 2048 {
		t.Errorf("got %+v, want rss 1024 and hwm 2048", m)
	}
	if _, err := parseProcStatus([]byte("Name:\tkthreadd\n")); err == nil {
		t.Error("a status without VmRSS parsed")
	}
}
