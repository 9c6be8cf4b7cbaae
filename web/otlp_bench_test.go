package web

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/store"
)

// TestTheOTLPBenchPayloadStoresWhatTheTextPayloadStores pins what
// BenchmarkOTLPPush compares: the OTLP rendering of a push, translated,
// is the same series and values as its text rendering.
func TestTheOTLPBenchPayloadStoresWhatTheTextPayloadStores(t *testing.T) {
	text, _ := newTestHandler(t, Options{})
	if w := do(t, text, http.MethodPut, "/metrics/job/bench/instance/i1", payload.Text(1, 2), nil); w.Code != http.StatusOK {
		t.Fatalf("text push: %d %s", w.Code, w.Body)
	}
	viaOTLP, _ := newTestHandler(t, Options{})
	body, err := payload.OTLPProtobuf(1, 2, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	w := do(t, viaOTLP, http.MethodPost, "/otlp/job/bench/instance/i1/v1/metrics", body, map[string]string{"Content-Type": payload.OTLPProtobufContentType})
	if w.Code != http.StatusOK {
		t.Fatalf("OTLP push: %d %s", w.Code, w.Body)
	}
	series := func(h *Handler) string {
		var out []string
		for _, line := range strings.Split(scrapeText(t, h), "\n") {
			if strings.HasPrefix(line, "batch_") {
				out = append(out, line)
			}
		}
		return strings.Join(out, "\n")
	}
	if a, b := series(text), series(viaOTLP); a != b || a == "" {
		t.Errorf("series differ\ntext:\n%s\nOTLP:\n%s", a, b)
	}
}

// BenchmarkOTLPPush measures an OTLP request carrying the batch-job
// payload (the 74 samples BenchmarkPush pushes as text, 42 OTLP points)
// through the handler into a store of 1,000 groups, as protobuf and as
// OTLP JSON: compare its time per op with BenchmarkPush's text PUT.
func BenchmarkOTLPPush(b *testing.B) {
	const groups = 1000
	for _, format := range []string{"protobuf", "json"} {
		b.Run("format="+format, func(b *testing.B) {
			st := store.New(store.Options{})
			h, err := New(st, prometheus.NewRegistry(), Options{TelemetryPath: "/metrics"})
			if err != nil {
				b.Fatal(err)
			}
			fillBenchGroups(b, st, groups)
			ctx := context.Background()
			bodies := make([][]byte, 64)
			contentType := payload.OTLPProtobufContentType
			now := time.Now()
			for i := range bodies {
				if format == "json" {
					contentType = payload.OTLPJSONContentType
					bodies[i], err = payload.OTLPJSON(i, i+1, now)
				} else {
					bodies[i], err = payload.OTLPProtobuf(i, i+1, now)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			targets := make([]string, groups)
			for i := range targets {
				targets[i] = fmt.Sprintf("/otlp/job/%s/instance/i%d/v1/metrics", payload.Job, i)
			}
			w := &discardWriter{header: http.Header{}}
			b.ReportAllocs()
			b.SetBytes(int64(len(bodies[0])))
			i := 0
			for b.Loop() {
				r, err := http.NewRequestWithContext(ctx, http.MethodPost, targets[i%groups], bytes.NewReader(bodies[i%len(bodies)]))
				if err != nil {
					b.Fatal(err)
				}
				r.Header.Set("Content-Type", contentType)
				w.code = 0
				clear(w.header)
				h.ServeHTTP(w, r)
				if w.code != http.StatusOK {
					b.Fatalf("push %d: status %d", i, w.code)
				}
				i++
			}
		})
	}
}
