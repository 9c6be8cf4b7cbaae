package store

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/limits"
)

// scribble decodes and releases garbage, so that the pooled buffer and
// arenas a push used are overwritten (sync.Pool hands this goroutine its own
// last object back; under -race it drops some, hence the rounds).
func scribble(t *testing.T, garbage string) {
	t.Helper()
	for range 8 {
		d, err := exposition.Decode(strings.NewReader(garbage), "", exposition.DecodeOptions{})
		if err == nil {
			d.Release()
		}
	}
}

// shifted returns body with every letter a-y and digit 0-8 moved up by one:
// the same length, other bytes (and mostly not valid exposition).
func shifted(body string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'y' || r >= '0' && r <= '8' {
			return r + 1
		}
		return r
	}, body)
}

// pushPooled pushes text through exposition.Decode and releases the decoded
// memory as web/push.go does, right after a Disposable Push.
func pushPooled(t testing.TB, s *Store, key groupkey.Key, body string) error {
	t.Helper()
	d, err := exposition.Decode(strings.NewReader(body), "", exposition.DecodeOptions{})
	if err != nil {
		t.Errorf("decode: %v", err)
		return err
	}
	_, err = s.Push(context.Background(), Push{Key: key, Method: Replace, Families: d.Families, Time: time.Now(), Disposable: true})
	d.Release()
	return err
}

func TestStoreKeepsNothingOfAReleasedPush(t *testing.T) {
	const body = "# HELP pooled_info Which build ran.\n# TYPE pooled_info gauge\n" +
		"pooled_info{branch=\"main\",commit=\"abc123\"} 1\n" +
		"# TYPE pooled_seconds histogram\n" +
		"pooled_seconds_bucket{stage=\"load\",le=\"1\"} 3\npooled_seconds_bucket{stage=\"load\",le=\"+Inf\"} 4\n" +
		"pooled_seconds_sum{stage=\"load\"} 2.5\npooled_seconds_count{stage=\"load\"} 4\n"
	want := []string{
		"# HELP pooled_info Which build ran.",
		`pooled_info{branch="main",commit="abc123",instance="",job="a"} 1`,
		`pooled_seconds_bucket{instance="",job="a",stage="load",le="1"} 3`,
		`pooled_seconds_bucket{instance="",job="a",stage="load",le="+Inf"} 4`,
		`pooled_seconds_sum{instance="",job="a",stage="load"} 2.5`,
		`pooled_seconds_count{instance="",job="a",stage="load"} 4`,
	}
	for round := range 5 {
		s := New(Options{})
		if err := pushPooled(t, s, storetest.Key("job", "a"), body); err != nil {
			t.Fatal(err)
		}
		// The same shape and length with other names and values, so that
		// it parses and fills the arenas the push used.
		other := strings.NewReplacer("pooled", "qppmfe", "main", "xxxx", "abc123", "zzz999", "load", "save",
			"Which build ran.", "Other text here!", "} 3", "} 7", "} 4", "} 8", "2.5", "9.5").Replace(body)
		scribble(t, other)
		// Another push refills the label buffers admission reused.
		if err := pushPooled(t, s, storetest.Key("job", "b"), other); err != nil {
			t.Fatal(err)
		}
		text, _ := scrape(t, s)
		for _, line := range want {
			if !strings.Contains(text, line+"\n") {
				t.Fatalf("round %d: the scrape lacks %q after the push's memory was reused:\n%s", round, line, text)
			}
		}
	}
}

func TestRejectionsOutliveTheReleasedPush(t *testing.T) {
	tests := []struct {
		name   string
		limits limits.Limits
		body   string
		want   string
	}{
		{"a duplicate series names the series", limits.Limits{}, "m{a=\"value1\"} 1\nm{a=\"value1\"} 2\n", `m{a="value1"`},
		{"a type conflict names the metric", limits.Limits{}, "# TYPE stored counter\nstored{a=\"value2\"} 1\n", `"stored"`},
		{"a series of another group names it", limits.Limits{}, "# TYPE stored gauge\nstored{instance=\"i1\"} 1\n", `stored{instance="i1"`},
		{"a timestamp names the metric", limits.Limits{}, "stamped{a=\"x\"} 1 1000\n", `"stamped"`},
		{"a long label value names the label", limits.Limits{MaxLabelValueLength: 6}, "m{longlabel=\"value3x\"} 1\n", `"longlabel"`},
		{"a reserved label name names it", limits.Limits{}, "m{__reserved=\"v\"} 1\n", `"__reserved"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Options{Limits: tt.limits})
			if _, err := s.Push(context.Background(), Push{Key: storetest.Key("job", "a", "instance", "i1"), Method: Replace,
				Families: storetest.Families(t, "# TYPE stored gauge\nstored 1\n"), Time: time.Now()}); err != nil {
				t.Fatal(err)
			}
			err := pushPooled(t, s, storetest.Key("job", "a"), tt.body)
			if err == nil {
				t.Fatal("the push was accepted")
			}
			// A copy: Error may return a field as it is, and that field
			// is what must not alias the body.
			before := strings.Clone(err.Error())
			if !strings.Contains(before, tt.want) {
				t.Fatalf("error %q does not contain %q", before, tt.want)
			}
			scribble(t, shifted(tt.body))
			if after := err.Error(); after != before {
				t.Errorf("the error changed once the push's memory was reused:\n was %q\n now %q", before, after)
			}
		})
	}
}

// TestDisposablePushesKeepTheirOwnLabels pushes from several goroutines at
// once, each a series labelled with its own group, through the reused
// admission buffers of Disposable pushes: every group must serve its own
// labels and value (under -race, two pushes sharing a buffer are a race).
func TestDisposablePushesKeepTheirOwnLabels(t *testing.T) {
	s := New(Options{})
	const workers, rounds = 4, 50
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				body := fmt.Sprintf("owned{worker=\"w%d\",round=\"r%d\",pad=\"%s\"} %d\n", w, r, strings.Repeat("x", r), w*1000+r)
				if err := pushPooled(t, s, storetest.Key("job", fmt.Sprintf("w%d", w), "instance", fmt.Sprintf("r%d", r)), body); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	text, fams := scrape(t, s)
	for w := range workers {
		for r := range rounds {
			labels := map[string]string{"job": fmt.Sprintf("w%d", w), "instance": fmt.Sprintf("r%d", r),
				"worker": fmt.Sprintf("w%d", w), "round": fmt.Sprintf("r%d", r), "pad": strings.Repeat("x", r)}
			if v, ok := storetest.Value(fams, "owned", labels); !ok || v != float64(w*1000+r) {
				t.Fatalf("worker %d round %d: got %v (found %v), want %d:\n%s", w, r, v, ok, w*1000+r, text)
			}
		}
	}
	if n := len(fams["owned"].GetMetric()); n != workers*rounds {
		t.Fatalf("%d series, want %d", n, workers*rounds)
	}
}
