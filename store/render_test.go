package store

import (
	"context"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/internal/storetest"
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
			f, err := newFamily(admission.Family{MF: mf, Series: []uint64{1}, Plain: true}, t0, enc, false, nil)
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
