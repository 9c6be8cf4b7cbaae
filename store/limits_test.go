package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/limits"
)

// requireLimit asserts that err is an *admission.Error with the given reason
// and fullness (StoreFull, else OverLimit) whose message names flag.
func requireLimit(t *testing.T, err error, reason string, full bool, flag string) {
	t.Helper()
	var lerr *admission.Error
	if !errors.As(err, &lerr) {
		t.Fatalf("got %v (%T), want an *admission.Error %s", err, err, reason)
	}
	wantClass := admission.OverLimit
	if full {
		wantClass = admission.StoreFull
	}
	if lerr.Reason != reason || lerr.Class != wantClass {
		t.Fatalf("got reason %q class %v, want %q class %v (%s)", lerr.Reason, lerr.Class, reason, wantClass, lerr)
	}
	if !strings.Contains(lerr.Error(), flag) || strings.ContainsAny(lerr.Error(), "\n\r") {
		t.Fatalf("message %q does not name %s on one line", lerr, flag)
	}
}

// requireTotals asserts that the running totals equal a full recount.
func requireTotals(t *testing.T, s *Store, groups, series int) {
	t.Helper()
	st := s.Stats()
	recount := 0
	for _, g := range s.Groups() {
		recount += g.SeriesCount()
	}
	indexed := 0
	s.mu.Lock()
	for _, e := range s.index.names {
		indexed += e.series.len()
	}
	s.mu.Unlock()
	if st.Groups != groups || st.Series != series || recount != series || indexed != series {
		t.Fatalf("stats %+v, recount %d, index %d; want %d groups and %d series", st, recount, indexed, groups, series)
	}
}

// seriesText returns n gauge samples of metric name.
func seriesText(name string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s{i=\"%d\"} 1\n", name, i)
	}
	return b.String()
}

func TestPerPushLimitsRejectAndStoreNothing(t *testing.T) {
	long := strings.Repeat("x", 20)
	// Five body labels plus job and instance: 7.
	manyLabels := "m{" + strings.TrimSuffix(labelList(5), ",") + "} 1\n"
	lim := limits.Limits{MaxSeriesPerPush: 3, MaxLabelsPerSeries: 6, MaxLabelNameLength: 10, MaxLabelValueLength: 10}
	cases := []struct {
		name   string
		key    groupkey.Key
		body   string
		reason string
		flag   string
	}{
		{"a push with more series than the limit", storetest.Key("job", "j"), seriesText("m", 4), admission.ReasonTooManySeries, "push has 4 series; --push.max-series is 3"},
		{"a series with too many labels counting job and instance", storetest.Key("job", "j"), manyLabels, admission.ReasonTooManyLabels, "--push.max-labels-per-series is 6"},
		{"grouping labels count toward the labels of a series", storetest.Key("job", "j", "g1", "v", "g2", "v"), "m{a=\"1\",b=\"2\",c=\"3\"} 1\n", admission.ReasonTooManyLabels, "with 7 labels"},
		{"a series with hundreds of labels is refused before sanitizing", storetest.Key("job", "j"), "m{" + strings.TrimSuffix(labelList(300), ",") + "} 1\n", admission.ReasonTooManyLabels, "with 300 labels"},
		{"a long label name in the body", storetest.Key("job", "j"), "m{" + long + "=\"v\"} 1\n", admission.ReasonLabelNameTooLong, "--push.max-label-name-length is 10"},
		{"a long label value in the body", storetest.Key("job", "j"), "m{a=\"" + long + "\"} 1\n", admission.ReasonLabelValueTooLong, `metric "m": value of label "a" has 20 bytes`},
		{"a long metric name", storetest.Key("job", "j"), long + " 1\n", admission.ReasonLabelValueTooLong, "--push.max-label-value-length is 10"},
		{"a long grouping label value", storetest.Key("job", long), "m 1\n", admission.ReasonLabelValueTooLong, `grouping key: value of label "job"`},
		{"a long grouping label name", storetest.Key("job", "j", long, "v"), "m 1\n", admission.ReasonLabelNameTooLong, "grouping key: label name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{Limits: lim})
			mustPush(t, s, storetest.Key("job", "other"), Replace, "other 1\n", time.Unix(1, 0))
			err := push(t, s, tc.key, Replace, tc.body, time.Unix(2, 0))
			requireLimit(t, err, tc.reason, false, tc.flag)
			if g := s.Group(tc.key); g != nil {
				t.Fatalf("rejected push created group %s", g.Key())
			}
			requireTotals(t, s, 1, 3)
		})
	}
}

// labelList returns n label pairs l0="v",l1="v",… with a trailing comma.
func labelList(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "l%d=\"v\",", i)
	}
	return b.String()
}

func TestPerPushLimitsLeaveAnExistingGroupUntouched(t *testing.T) {
	s := New(Options{Limits: limits.Limits{MaxSeriesPerPush: 2}})
	k := storetest.Key("job", "j")
	mustPush(t, s, k, Replace, seriesText("m", 2), time.Unix(1, 0))
	before := s.Group(k)
	requireLimit(t, push(t, s, k, Merge, seriesText("m", 3), time.Unix(2, 0)), admission.ReasonTooManySeries, false, "--push.max-series")
	if after := s.Group(k); after != before || !after.FailureTime().IsZero() {
		t.Fatalf("group changed: failure time %v", after.FailureTime())
	}
}

func TestLimitsAtExactlyTheLimitPass(t *testing.T) {
	s := New(Options{Limits: limits.Limits{MaxSeriesPerPush: 3, MaxLabelsPerSeries: 3, MaxLabelNameLength: 3, MaxLabelValueLength: 3, MaxGroups: 1, MaxSeries: 5}})
	// job, instance and abc: 3 labels; name and values of 3 bytes; 3 series
	// plus the 2 push-time series: 5.
	mustPush(t, s, storetest.Key("job", "jjj"), Replace, "mmm{abc=\"vv1\"} 1\nmmm{abc=\"vv2\"} 1\nmmm{abc=\"vv3\"} 1\n", time.Unix(1, 0))
	requireTotals(t, s, 1, 5)
}

func TestStoreFullOfGroups(t *testing.T) {
	s := New(Options{Limits: limits.Limits{MaxGroups: 2}})
	ctx := context.Background()
	mustPush(t, s, storetest.Key("job", "a"), Replace, "m{x=\"a\"} 1\n", time.Unix(1, 0))
	mustPush(t, s, storetest.Key("job", "b"), Replace, "m{x=\"b\"} 1\n", time.Unix(1, 0))

	err := push(t, s, storetest.Key("job", "c"), Replace, "m{x=\"c\"} 1\n", time.Unix(2, 0))
	requireLimit(t, err, admission.ReasonStoreFullGroups, true, "--store.max-groups is 2")
	if s.Group(storetest.Key("job", "c")) != nil {
		t.Fatal("a push refused for a full store created its group")
	}
	requireTotals(t, s, 2, 6)

	// Pushes to existing groups still work, replace and merge.
	mustPush(t, s, storetest.Key("job", "a"), Replace, "m{x=\"a\"} 2\n", time.Unix(3, 0))
	mustPush(t, s, storetest.Key("job", "b"), Merge, "n{x=\"b\"} 2\n", time.Unix(3, 0))
	requireTotals(t, s, 2, 7)

	// A push failing the checks must not create a group to record its
	// failure time in a full store.
	err = push(t, s, storetest.Key("job", "c"), Replace, "m{x=\"c\"} 1 1000\n", time.Unix(4, 0))
	var rej *admission.Error
	if !errors.As(err, &rej) || rej.Class != admission.Refused {
		t.Fatalf("a push with a timestamp: got %v, want a Refused *admission.Error", err)
	}
	if s.Group(storetest.Key("job", "c")) != nil {
		t.Fatal("a failure record grew a full store")
	}

	// Deleting a group makes room.
	if _, err := s.Delete(ctx, storetest.Key("job", "a")); err != nil {
		t.Fatal(err)
	}
	mustPush(t, s, storetest.Key("job", "c"), Replace, "m{x=\"c\"} 1\n", time.Unix(5, 0))
	requireTotals(t, s, 2, 7)
}

func TestStoreFullOfSeriesCountsTheNetChange(t *testing.T) {
	// Each group holds its pushed series plus push_time_seconds and
	// push_failure_time_seconds.
	s := New(Options{Limits: limits.Limits{MaxSeries: 10}})
	a, b := storetest.Key("job", "a"), storetest.Key("job", "b")
	mustPush(t, s, a, Replace, seriesText("m", 3), time.Unix(1, 0)) // 5
	mustPush(t, s, b, Replace, seriesText("n", 3), time.Unix(1, 0)) // 10
	requireTotals(t, s, 2, 10)

	cases := []struct {
		name   string
		key    groupkey.Key
		method Method
		body   string
		ok     bool
	}{
		{"replacing a group by one of the same size", a, Replace, seriesText("m", 3), true},
		{"replacing a group by a different family of the same size", a, Replace, seriesText("o", 3), true},
		{"merging a family of the same size", b, Merge, seriesText("n", 3), true},
		{"replacing a group by a larger one", a, Replace, seriesText("o", 4), false},
		{"merging a new family", b, Merge, seriesText("p", 1), false},
		{"a new group", storetest.Key("job", "c"), Replace, "", false},
		{"shrinking a group", a, Replace, seriesText("o", 1), true},
		{"growing it back into the freed room", b, Merge, seriesText("p", 2), true},
	}
	for _, tc := range cases {
		before := s.Stats()
		err := push(t, s, tc.key, tc.method, tc.body, time.Unix(2, 0))
		if tc.ok && err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !tc.ok {
			requireLimit(t, err, admission.ReasonStoreFullSeries, true, "--store.max-series is 10")
			if after := s.Stats(); after != before {
				t.Fatalf("%s: a refused push changed the store: %+v → %+v", tc.name, before, after)
			}
		}
	}
	requireTotals(t, s, 2, 10)
}

func TestTotalsStayExactThroughEveryChange(t *testing.T) {
	ctx := context.Background()
	s := New(Options{})
	a, b, c := storetest.Key("job", "a"), storetest.Key("job", "b"), storetest.Key("job", "c")
	mustPush(t, s, a, Replace, seriesText("m", 3)+seriesText("n", 2), time.Unix(1, 0))
	requireTotals(t, s, 1, 7)
	mustPush(t, s, a, Merge, seriesText("n", 4), time.Unix(2, 0))
	requireTotals(t, s, 1, 9)
	mustPush(t, s, a, Replace, seriesText("o", 1), time.Unix(3, 0))
	requireTotals(t, s, 1, 3)
	// A rejected push to an absent group records its failure time: a new
	// group with the two time series.
	if err := push(t, s, b, Replace, "o{i=\"0\"} 1 1000\n", time.Unix(4, 0)); err == nil {
		t.Fatal("a push with a timestamp was accepted")
	}
	requireTotals(t, s, 2, 5)
	mustPush(t, s, c, Replace, seriesText("p", 2), time.Unix(5, 0))
	requireTotals(t, s, 3, 9)
	if _, err := s.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	requireTotals(t, s, 2, 7)
	if _, _, err := s.DeleteWhere(ctx, func(g *Group) bool { return g.Key().ID() == c.ID() }, false); err != nil {
		t.Fatal(err)
	}
	requireTotals(t, s, 1, 3)

	// Restore the journal's view of the store into a fresh one with limits
	// far below its content: restored data is never dropped by a limit.
	mustPush(t, s, c, Replace, seriesText("p", 2), time.Unix(6, 0))
	r := New(Options{Limits: limits.Limits{MaxGroups: 1, MaxSeries: 2, MaxSeriesPerPush: 1}})
	for _, g := range s.Groups() {
		if err := r.Restore(g.Key().ID(), testRecord(t, g)); err != nil {
			t.Fatal(err)
		}
	}
	// Restoring a key twice (the journal holds only the last state, but an
	// import may repeat a key) replaces, so it counts once.
	g := s.Group(c)
	if err := r.Restore(g.Key().ID(), testRecord(t, g)); err != nil {
		t.Fatal(err)
	}
	requireTotals(t, r, 2, 7)
	requireLimit(t, push(t, r, storetest.Key("job", "d"), Replace, "", time.Unix(7, 0)), admission.ReasonStoreFullGroups, true, "--store.max-groups")
	// A group shrinking in an over-full store is accepted.
	if _, err := r.Push(ctx, Push{Key: c, Method: Replace, Families: storetest.Families(t, "p 1\n"), Time: time.Unix(8, 0)}); err != nil {
		t.Fatalf("shrinking push in an over-full store: %v", err)
	}
	requireTotals(t, r, 2, 6)

	if _, err := r.Wipe(ctx); err != nil {
		t.Fatal(err)
	}
	requireTotals(t, r, 0, 0)
}

func TestZeroLimitsMeanNoLimit(t *testing.T) {
	s := New(Options{})
	// Each default limit is exceeded once: a 100 KB grouping value and body
	// value (MaxLabelValueLength), 200 labels (MaxLabelsPerSeries). A few
	// series carry the long grouping value; a thousand of them cost 25 s
	// under -race and proved nothing more.
	long := strings.Repeat("v", 100_000)
	mustPush(t, s, storetest.Key("job", long), Replace, seriesText("m", 3)+"n{"+labelList(200)+"x=\""+long+"\"} 1\n", time.Unix(1, 0))
	requireTotals(t, s, 1, 6)
}
