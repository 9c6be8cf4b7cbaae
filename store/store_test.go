package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/internal/storetest"
)

// scrape renders a snapshot of the store as text (snapshotBody) and parses
// it back with expfmt.
func scrape(t *testing.T, s *Store) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	text := textScrape(t, s.Snapshot())
	parser := expfmt.NewTextParser(model.LegacyValidation)
	parsed, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("scrape does not parse: %v\n%s", err, text)
	}
	return text, parsed
}

func push(t *testing.T, s *Store, k groupkey.Key, m Method, text string, at time.Time) error {
	t.Helper()
	_, err := s.Push(context.Background(), Push{Key: k, Method: m, Families: storetest.Families(t, text), Time: at})
	return err
}

func mustPush(t *testing.T, s *Store, k groupkey.Key, m Method, text string, at time.Time) {
	t.Helper()
	if err := push(t, s, k, m, text, at); err != nil {
		t.Fatalf("push to %s: %v", k, err)
	}
}

var t0 = time.Unix(1_700_000_000, 500_000_000)

func TestReplaceReplacesTheWholeGroupAndMergeOnlyNamedFamilies(t *testing.T) {
	s := New(Options{})
	k := storetest.Key("job", "j", "instance", "i")
	mustPush(t, s, k, Replace, "a 1\nb 2\n", t0)
	mustPush(t, s, k, Merge, "b 3\nc 4\n", t0.Add(time.Second))
	_, fams := scrape(t, s)
	lbl := map[string]string{"job": "j", "instance": "i"}
	for name, want := range map[string]float64{"a": 1, "b": 3, "c": 4} {
		if got, ok := storetest.Value(fams, name, lbl); !ok || got != want {
			t.Errorf("after POST, %s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	mustPush(t, s, k, Replace, "d 5\n", t0.Add(2*time.Second))
	_, fams = scrape(t, s)
	for _, gone := range []string{"a", "b", "c"} {
		if _, ok := storetest.Value(fams, gone, lbl); ok {
			t.Errorf("after PUT, %s is still present", gone)
		}
	}
	if got, _ := storetest.Value(fams, "push_time_seconds", lbl); got != 1_700_000_002.5 {
		t.Errorf("push_time_seconds = %v, want 1700000002.5", got)
	}
	if got, ok := storetest.Value(fams, "push_failure_time_seconds", lbl); !ok || got != 0 {
		t.Errorf("push_failure_time_seconds = %v (present %v), want 0", got, ok)
	}
}

func TestGroupingLabelsOverwriteBodyLabelsAndInstanceDefaultsToEmpty(t *testing.T) {
	s := New(Options{})
	mustPush(t, s, storetest.Key("job", "j3", "foo", "baz"), Replace, `some_metric{job="x",instance="y",foo="bar"} 1`+"\n", t0)
	mustPush(t, s, storetest.Key("job", "j4"), Replace, "other 2\n", t0)
	_, fams := scrape(t, s)
	if _, ok := storetest.Value(fams, "some_metric", map[string]string{"job": "j3", "foo": "baz", "instance": "y"}); !ok {
		t.Error("body labels were not overwritten by the grouping labels")
	}
	if _, ok := storetest.Value(fams, "other", map[string]string{"job": "j4", "instance": ""}); !ok {
		t.Error(`a series without instance did not get instance=""`)
	}
}

func TestRejectedPushes(t *testing.T) {
	cases := []struct {
		name    string
		setup   []string // group job=a, then job=b bodies
		key     groupkey.Key
		body    string
		wantErr string
	}{
		{"a sample timestamp is rejected", nil, storetest.Key("job", "x"), "m 1 1234\n", "must not have timestamps"},
		{"a type conflict with another group is rejected", []string{"# TYPE m counter\nm 1\n"}, storetest.Key("job", "x"), "# TYPE m gauge\nm 1\n", "is pushed as gauge but is a counter"},
		{"a series another group already holds is rejected", []string{`m{instance="i"} 1` + "\n"}, storetest.Key("job", "a", "instance", "i"), "m 2\n", "already pushed by group"},
		{"X_count beside a summary X is rejected", []string{"# TYPE s summary\ns_sum 1\ns_count 1\n"}, storetest.Key("job", "x"), "s_count 3\n", "collides"},
		{"a histogram beside an existing X_bucket is rejected", []string{"h_bucket 1\n"}, storetest.Key("job", "x"), "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n", "collides"},
		{"a summary with a quantile grouping label is rejected", nil, storetest.Key("job", "x", "quantile", "0.5"), "# TYPE s summary\ns{quantile=\"0.5\"} 1\ns_sum 1\ns_count 1\n", "quantile"},
		{"a histogram with an le grouping label is rejected", nil, storetest.Key("job", "x", "le", "1"), "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n", `"le"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{})
			for _, body := range tc.setup {
				mustPush(t, s, storetest.Key("job", "a"), Replace, body, t0)
			}
			before, _ := scrape(t, s)
			err := push(t, s, tc.key, Replace, tc.body, t0.Add(time.Second))
			var rej *admission.Error
			if !errors.As(err, &rej) || rej.Class != admission.Refused || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want a refusal containing %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("reason is not one line: %q", err)
			}
			after, fams := scrape(t, s)
			g := s.Group(tc.key)
			if g == nil {
				t.Fatalf("the failure was not recorded: group %s absent", tc.key)
			}
			if !g.FailureTime().Equal(t0.Add(time.Second)) || !g.PushTime().IsZero() {
				t.Errorf("failed group times = push %v, failure %v", g.PushTime(), g.FailureTime())
			}
			// Apart from the new group's two timestamp series, nothing changed.
			if strings.Count(after, "\n")-strings.Count(before, "\n") > 6 {
				t.Errorf("the store changed beyond the failure record:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			_ = fams
		})
	}
}

func TestARejectedPushCannotPoisonTheStore(t *testing.T) {
	s := New(Options{})
	mustPush(t, s, storetest.Key("job", "s1"), Replace, "m 1\n", t0)
	// {job="s1",instance=""} would duplicate {job="s1"}'s series, including
	// its push_time_seconds: the reference creates the group anyway and every
	// later scrape and push fails.
	err := push(t, s, storetest.Key("job", "s1", "instance", ""), Replace, "m 2\n", t0.Add(time.Second))
	var rej *admission.Error
	if !errors.As(err, &rej) || rej.Class != admission.Refused {
		t.Fatalf("err = %v, want a refusal", err)
	}
	if s.Group(storetest.Key("job", "s1", "instance", "")) != nil {
		t.Fatal("the rejected group was created and now duplicates another group's series")
	}
	scrape(t, s)
	mustPush(t, s, storetest.Key("job", "other"), Replace, "m 3\n", t0.Add(2*time.Second))
	scrape(t, s)
}

func TestFailureOnAnExistingGroupKeepsItsMetrics(t *testing.T) {
	s := New(Options{})
	k := storetest.Key("job", "j")
	mustPush(t, s, k, Replace, "a 1\n", t0)
	if err := push(t, s, k, Replace, "a 1 123\n", t0.Add(time.Second)); err == nil {
		t.Fatal("a push with a timestamp was accepted")
	}
	_, fams := scrape(t, s)
	lbl := map[string]string{"job": "j", "instance": ""}
	if v, ok := storetest.Value(fams, "a", lbl); !ok || v != 1 {
		t.Errorf("a = %v (present %v) after a failed push, want 1", v, ok)
	}
	pt, _ := storetest.Value(fams, "push_time_seconds", lbl)
	ft, _ := storetest.Value(fams, "push_failure_time_seconds", lbl)
	if !(ft > pt) {
		t.Errorf("push_failure_time_seconds %v is not after push_time_seconds %v", ft, pt)
	}
	if s.Group(k).LastPushSuccessful() {
		t.Error("LastPushSuccessful is true after a failure")
	}
}

func TestDeleteWipeAndDeleteWhere(t *testing.T) {
	s := New(Options{})
	ctx := context.Background()
	for _, j := range []string{"a", "b", "c"} {
		mustPush(t, s, storetest.Key("job", j), Replace, "m 1\n", t0)
	}
	if _, err := s.Delete(ctx, storetest.Key("job", "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, storetest.Key("job", "absent")); err != nil {
		t.Fatalf("deleting an absent group: %v", err)
	}
	keys, _, err := s.DeleteWhere(ctx, func(g *Group) bool { return g.Key().Job() == "b" }, true)
	if err != nil || len(keys) != 1 || s.Group(storetest.Key("job", "b")) == nil {
		t.Fatalf("dry run: keys %v, err %v; the group must stay", keys, err)
	}
	if _, _, err := s.DeleteWhere(ctx, func(g *Group) bool { return g.Key().Job() == "b" }, false); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().Groups; got != 1 {
		t.Fatalf("groups = %d, want 1", got)
	}
	if _, err := s.Wipe(ctx); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Groups != 0 || st.Series != 0 || st.Families != 0 {
		t.Fatalf("after wipe: %+v", st)
	}
	// The index forgot everything: a new type for m is fine now.
	mustPush(t, s, storetest.Key("job", "a"), Replace, "# TYPE m counter\nm 1\n", t0)
}
