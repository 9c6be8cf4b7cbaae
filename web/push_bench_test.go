package web

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pushgate/pushgate/bench/payload"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/store"
)

// discardWriter is a ResponseWriter that keeps only the status code, so
// that the benchmark measures the handler rather than a recorder.
type discardWriter struct {
	header http.Header
	code   int
}

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }

// BenchmarkPush measures a checked PUT of the batch-job payload through the
// handler, body decoding included, into a store of 1,000 groups: the bytes
// and allocations per push are what the garbage collector pays for. With
// scraped=yes a text scrape is marked as started before each push, so that the
// push renders its text bodies (store's renderAtPush); without, the pushes
// replace bodies no scrape read and render none, as pushes faster than
// scrapes do. format=text-repush pushes every group the same shape, so that
// its pushes are applied from its template (store.PushText); format=text
// changes each group's shape at each push, so that every push is parsed.
func BenchmarkPush(b *testing.B) {
	const groups = 1000
	for _, c := range []struct{ format, scraped string }{
		{"text", "no"}, {"text-repush", "no"}, {"protobuf", "no"},
		{"text", "yes"}, {"text-repush", "yes"}, {"protobuf", "yes"},
	} {
		format := c.format
		b.Run("format="+format+"/scraped="+c.scraped, func(b *testing.B) {
			st := store.New(store.Options{})
			h, err := New(st, prometheus.NewRegistry(), Options{TelemetryPath: "/metrics"})
			if err != nil {
				b.Fatal(err)
			}
			fillBenchGroups(b, st, groups)
			ctx := context.Background()
			bodies, others := make([][]byte, 64), make([][]byte, 64)
			contentType := payload.TextContentType
			for i := range bodies {
				switch format {
				case "text":
					// Two shapes, each group's pushes in turn (a comment
					// line changes the skeleton, not the families):
					// every push is parsed and checked, none applied from
					// its group's template.
					bodies[i] = payload.Text(i, i+1)
					others[i] = append([]byte("# another shape\n"), bodies[i]...)
					continue
				case "text-repush":
					// One shape: after a group's first push, every push
					// is applied from its template (store.PushText).
					bodies[i] = payload.Text(i, i+1)
					continue
				}
				contentType = payload.ProtobufContentType
				if bodies[i], err = payload.Protobuf(i, i+1); err != nil {
					b.Fatal(err)
				}
			}
			targets := make([]string, groups)
			for i := range targets {
				targets[i] = fmt.Sprintf("/metrics/job/%s/instance/i%d", payload.Job, i)
			}
			// The store's render state, which a scrape marks as it starts.
			sn := st.Snapshot()
			rs := sn.RenderState()
			sn.Release()
			w := &discardWriter{header: http.Header{}}
			b.ReportAllocs()
			b.SetBytes(int64(len(bodies[0])))
			i := 0
			for b.Loop() {
				if c.scraped == "yes" {
					rs.StartScrape(exposition.EncodingText)
				}
				body := bodies[i%len(bodies)]
				if format == "text" && i/groups%2 == 1 {
					body = others[i%len(others)]
				}
				r, err := http.NewRequestWithContext(ctx, http.MethodPut, targets[i%groups], bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				r.Header.Set("Content-Type", contentType)
				w.code = 0
				h.ServeHTTP(w, r)
				if w.code != http.StatusOK {
					b.Fatalf("push %d: status %d", i, w.code)
				}
				i++
			}
		})
	}
}
