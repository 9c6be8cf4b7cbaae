package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pushgate/pushgate/bench/payload"
)

// nullServer is the ceiling: it does the least an HTTP server can do for a
// gateway's requests. Pushes and deletes are read to the end and answered
// 200 with no body; GET /metrics serves a fixed body that was rendered, and
// gzip-compressed, once at start-up, the way a static file server with
// precompressed content serves it. Its scrape time is therefore pure
// transfer: a gateway cannot serve the same bytes faster over HTTP/1.1.
type nullServer struct {
	body     []byte
	gzipped  []byte
	protobuf []byte // served to protobuf scrapers when set
	log      *slog.Logger
}

// newNullServer prepares body and its gzip form.
func newNullServer(body []byte, log *slog.Logger) (*nullServer, error) {
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	if _, err := zw.Write(body); err != nil {
		return nil, fmt.Errorf("compress static body: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress static body: %w", err)
	}
	return &nullServer{body: body, gzipped: zb.Bytes(), log: log}, nil
}

// ServeHTTP answers every request as described on nullServer.
func (s *nullServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPut, http.MethodPost, http.MethodDelete:
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
			return
		}
		w.Header()["Content-Length"] = []string{"0"}
		w.WriteHeader(http.StatusOK)
	case http.MethodGet, http.MethodHead:
		switch r.URL.Path {
		case "/metrics":
			s.serveMetrics(w, r)
		case "/-/ready", "/-/healthy":
			w.WriteHeader(http.StatusOK)
		default:
			http.NotFound(w, r)
		}
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func (s *nullServer) serveMetrics(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	body := s.body
	if s.protobuf != nil && strings.Contains(r.Header.Get("Accept"), "application/vnd.google.protobuf") {
		h.Set("Content-Type", payload.ProtobufContentType)
		body = s.protobuf
	} else if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		body = s.gzipped
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	if _, err := w.Write(body); err != nil {
		s.log.Debug("write metrics", "err", err)
	}
}

func acceptsGzip(h string) bool {
	for part := range strings.SplitSeq(h, ",") {
		enc, _, _ := strings.Cut(part, ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			return true
		}
	}
	return false
}

// staticBody returns the file's contents, or about n bytes of a gateway's
// exposition of bench groups, cut at a line end.
func staticBody(file string, n int) ([]byte, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read static file: %w", err)
		}
		return b, nil
	}
	// Size one extra group from the difference, since the HELP and TYPE
	// lines are shared.
	perGroup := len(payload.Exposition(2)) - len(payload.Exposition(1))
	b := payload.Exposition(n/perGroup + 1)
	if len(b) > n {
		b = b[:n]
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			b = b[:i+1]
		}
	}
	return b, nil
}

// cmdNull runs the null server until interrupted or -max-lifetime passes.
func cmdNull(ctx context.Context, args []string, w io.Writer, log *slog.Logger) error {
	fs := flag.NewFlagSet("null", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:19093", "listen address (loopback only)")
	file := fs.String("static-file", "", "serve this file's bytes on GET /metrics")
	pbFile := fs.String("static-protobuf-file", "", "serve this file's bytes, uncompressed, to GET /metrics with a protobuf Accept header")
	size := fs.Int("static-bytes", 0, "serve this many bytes of generated bench exposition on GET /metrics (10,000 groups ≈ 79,000,000)")
	lifetime := fs.Duration("max-lifetime", 2*time.Hour, "exit after this long")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *file != "" && *size > 0 {
		return fmt.Errorf("-static-file and -static-bytes exclude each other: %w", errUsage)
	}
	if err := cmpErr(checkRange("static-bytes", int64(*size), 0, 4<<30), checkDuration("max-lifetime", *lifetime)); err != nil {
		return err
	}
	if err := checkListenAddress(ctx, *listen, net.DefaultResolver.LookupIPAddr); err != nil {
		return err
	}
	body, err := staticBody(*file, *size)
	if err != nil {
		return err
	}
	srv, err := newNullServer(body, log)
	if err != nil {
		return err
	}
	if *pbFile != "" {
		if srv.protobuf, err = os.ReadFile(*pbFile); err != nil {
			return fmt.Errorf("read static protobuf file: %w", err)
		}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Minute}
	log.Info("null server listening", "addr", ln.Addr().String(), "static_bytes", len(body), "gzip_bytes", len(srv.gzipped))
	fmt.Fprintf(w, "listening on %s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	runCtx, cancel := context.WithTimeout(ctx, *lifetime)
	defer cancel()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-runCtx.Done():
	}
	shutCtx, shutCancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer shutCancel()
	if err := hs.Shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}
