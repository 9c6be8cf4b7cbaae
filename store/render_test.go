package store

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/render"
)

func TestThePushOutcomeDoesNotDependOnTheFormatScrapedLast(t *testing.T) {
	for name, mf := range map[string]func() *dto.MetricFamily{
		"a float native histogram":                      func() *dto.MetricFamily { return storetest.FloatHistogram("f") },
		"a counter whose exemplar timestamp is invalid": func() *dto.MetricFamily { return storetest.BadExemplarCounter("c_total") },
	} {
		t.Run(name, func(t *testing.T) {
			outcome := map[exposition.Encoding]error{}
			for _, enc := range []exposition.Encoding{exposition.EncodingText, exposition.EncodingOpenMetrics} {
				s := New(Options{})
				sn := s.Snapshot()
				sn.RenderState().StartScrape(enc)
				sn.Release()
				_, outcome[enc] = s.Push(context.Background(), Push{Key: storetest.Key("job", "j"), Families: []*dto.MetricFamily{mf()}, Time: t0})
			}
			if (outcome[exposition.EncodingText] == nil) != (outcome[exposition.EncodingOpenMetrics] == nil) {
				t.Errorf("after a text scrape the push gets %v, after an OpenMetrics scrape %v", outcome[exposition.EncodingText], outcome[exposition.EncodingOpenMetrics])
			}
		})
	}
}

func TestNewFamilyStoresWhatItCannotRenderInTheEncodingLastScraped(t *testing.T) {
	for _, enc := range []exposition.Encoding{exposition.EncodingText, exposition.EncodingOpenMetrics, exposition.EncodingProtobuf} {
		t.Run(enc.String(), func(t *testing.T) {
			mf := storetest.FloatHistogram("f")
			f, err := newFamily(admission.Family{MF: mf, Series: []uint64{1}, Plain: true}, t0.UnixNano(), enc, false, nil)
			if err != nil {
				t.Fatalf("newFamily fails after a %s scrape: %v", enc, err)
			}
			got, err := f.Decode()
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got.Metric[0], mf.Metric[0]) {
				t.Errorf("stored %v, want %v", got.Metric[0], mf.Metric[0])
			}
		})
	}
}

// TestPushesRenderTextOnlyWhileTextIsScraped: a store never scraped renders
// its pushes' text bodies; once scraped, it renders them only while a text
// or OpenMetrics scrape started within render.TextWindow, so a gateway
// scraped only with protobuf renders none, and a text scrape makes pushes
// render again, in its encoding. Within the window, a push renders only
// when a text scrape started since the group's last push: bodies replaced
// unread are not rendered again until a scrape reads them.
func TestPushesRenderTextOnlyWhileTextIsScraped(t *testing.T) {
	s := New(Options{})
	key := storetest.Key("job", "j")
	now := time.Now()
	push := func(v string, at time.Time) {
		t.Helper()
		if _, err := s.Push(context.Background(), Push{Key: key, Families: storetest.Families(t, "# TYPE m gauge\nm{a=\"1\"} "+v+"\n"), Time: at}); err != nil {
			t.Fatal(err)
		}
	}
	// rendered reports which families of the group have a pushed body.
	rendered := func() map[string]bool {
		got := map[string]bool{}
		for _, f := range s.Group(key).Families() {
			packed, _, _ := f.Cache().Pushed()
			got[f.Name()] = packed != nil
		}
		return got
	}
	scrape := func(enc exposition.Encoding) {
		sn := s.Snapshot()
		sn.RenderState().StartScrape(enc)
		sn.Release()
	}
	push("1", now)
	if got := rendered(); !got["m"] || !got[PushTimeName] || !got[PushFailureTimeName] {
		t.Fatalf("a push into a store never scraped rendered %v, want every body", got)
	}
	scrape(exposition.EncodingProtobuf)
	push("2", now)
	if got := rendered(); got["m"] || got[PushTimeName] {
		t.Errorf("a push into a store scraped only with protobuf rendered %v, want neither m nor %s", got, PushTimeName)
	}
	scrape(exposition.EncodingOpenMetrics)
	push("3", now)
	if got := rendered(); !got["m"] || !got[PushTimeName] {
		t.Errorf("a push after an OpenMetrics scrape rendered %v, want m and %s", got, PushTimeName)
	}
	if _, _, enc := s.Group(key).Families()[0].Cache().Pushed(); enc != exposition.EncodingOpenMetrics {
		t.Errorf("the push rendered %s, want the encoding last scraped", enc)
	}
	push("4", now)
	if got := rendered(); got["m"] || got[PushTimeName] {
		t.Errorf("a push replacing bodies no scrape started after rendered %v, want neither m nor %s", got, PushTimeName)
	}
	scrape(exposition.EncodingOpenMetrics)
	scrape(exposition.EncodingProtobuf)
	push("5", now.Add(time.Minute))
	if got := rendered(); !got["m"] {
		t.Error("a push a minute after an OpenMetrics scrape, which read the last push, rendered no body")
	}
	scrape(exposition.EncodingText)
	push("6", time.Now().Add(render.TextWindow+time.Minute))
	if got := rendered(); got["m"] {
		t.Errorf("a push more than %v after the last text scrape rendered a body", render.TextWindow)
	}
}
