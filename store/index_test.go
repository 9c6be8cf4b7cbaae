package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/internal/storetest"
)

// seriesBody returns a gauge family m with n series, m{s="0"} … m{s="n-1"}.
func seriesBody(n int) string {
	var b strings.Builder
	b.WriteString("# TYPE m gauge\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "m{s=\"%d\"} %d\n", i, i)
	}
	return b.String()
}

func TestSeriesOwnership(t *testing.T) {
	for _, n := range []int{1, 16, 200} {
		t.Run(fmt.Sprintf("%d series", n), func(t *testing.T) {
			s := New(Options{})
			a, b := storetest.Key("job", "a", "instance", "x"), storetest.Key("job", "b", "instance", "x")
			body := seriesBody(n)
			// Grouping labels differ, so the series differ: both succeed.
			mustPush(t, s, a, Replace, body, t0)
			mustPush(t, s, b, Replace, body, t0)
			// The same group pushing its own series again is no conflict.
			mustPush(t, s, a, Replace, body, t0.Add(time.Second))
			mustPush(t, s, a, Merge, body, t0.Add(2*time.Second))

			// Another group cannot take over one of group a's series; the
			// reason names group a, the series' owner in the index.
			err := push(t, s, storetest.Key("job", "a", "instance", "x", "s", "0"), Replace, "# TYPE m gauge\nm 1\n", t0.Add(3*time.Second))
			if err == nil || !strings.Contains(err.Error(), `already pushed by group {instance="x",job="a"}`) {
				t.Fatalf("err = %v, want the series named as group a's", err)
			}

			// Once group a is deleted, its series are free.
			if _, err := s.Delete(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			mustPush(t, s, storetest.Key("job", "a", "instance", "x", "s", "0"), Replace, "# TYPE m gauge\nm 1\n", t0.Add(4*time.Second))
			if st := s.Stats(); st.Series != n+1+4 {
				t.Errorf("series in the index = %d, want %d", st.Series, n+1+4)
			}
		})
	}
}

// TestGroupNumbersAreReusedWithoutMixingOwners churns groups so that freed
// numbers are handed to new groups, and checks after every step that each
// series is owned by the number of the group that holds it and that
// nothing is left once all groups are gone.
func TestGroupNumbersAreReusedWithoutMixingOwners(t *testing.T) {
	s := New(Options{})
	ctx := context.Background()
	groupKey := func(i int) groupkey.Key { return storetest.Key("job", "churn", "instance", fmt.Sprint(i)) }
	body := func(i int) string {
		return fmt.Sprintf("# TYPE churn_%d gauge\nchurn_%d{k=\"v\"} 1\n# TYPE shared gauge\nshared{g=\"%d\"} 1\n", i%3, i%3, i)
	}
	live := map[int]bool{}
	for step := range 60 {
		i := (step * 7) % 13
		if live[i] && step%3 == 0 {
			if _, err := s.Delete(ctx, groupKey(i)); err != nil {
				t.Fatal(err)
			}
			delete(live, i)
		} else {
			mustPush(t, s, groupKey(i), Replace, body(i), t0.Add(time.Duration(step)*time.Second))
			live[i] = true
		}
		checkIndexOwners(t, s)
	}
	if _, err := s.Wipe(ctx); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.index.nums) != 0 || len(s.index.free) != len(s.index.gids) {
		t.Fatalf("after a wipe: %d numbered groups, %d free of %d numbers", len(s.index.nums), len(s.index.free), len(s.index.gids))
	}
}

// checkIndexOwners verifies that every indexed series belongs to the group
// its number stands for, and that every group's families are all counted.
func checkIndexOwners(t *testing.T, s *Store) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for gid, g := range s.groups {
		n, ok := s.index.nums[gid]
		if !ok {
			t.Fatalf("group %s has no number", gid)
		}
		if s.index.gids[n] != gid || int(s.index.families[n]) != len(g.families) {
			t.Fatalf("group %s: number %d stands for %q with %d families, want %d", gid, n, s.index.gids[n], s.index.families[n], len(g.families))
		}
		for _, f := range g.families {
			name := f.Name()
			for _, h := range f.series() {
				o, ok := s.index.names[name].series.get(h)
				if !ok {
					t.Fatalf("series of %s in group %s is not indexed", name, gid)
				}
				if o != n {
					t.Fatalf("series of %s in group %s is owned by number %d (%q), want %d", name, gid, o, s.index.gids[o], n)
				}
			}
		}
	}
	if len(s.index.nums) != len(s.groups) {
		t.Fatalf("%d numbered groups, %d groups", len(s.index.nums), len(s.groups))
	}
}

// TestConflictReasonsQuoteUTF8Names checks that the reasons naming a series
// or a group stay on one line when a UTF-8 name holds a line break, and
// quote such names as Prometheus 3 writes them.
func TestConflictReasonsQuoteUTF8Names(t *testing.T) {
	s := New(Options{UTF8Names: true})
	fams := func(text string) Push {
		t.Helper()
		decoded, err := exposition.Decode(strings.NewReader(text), "", exposition.DecodeOptions{UTF8Names: true})
		if err != nil {
			t.Fatalf("decode test body: %v", err)
		}
		return Push{Method: Replace, Families: decoded.Families, Time: t0}
	}
	owner := fams("{\"m\\nx\",\"l\\nb\"=\"v\"} 1\n")
	owner.Key = storetest.Key("job", "a", "g\nk", "1")
	if _, err := s.Push(context.Background(), owner); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		p    Push
		want string
	}{
		{"a series another group holds", func() Push {
			p := fams("{\"m\\nx\",\"l\\nb\"=\"v\",\"g\\nk\"=\"1\"} 2\n")
			p.Key = storetest.Key("job", "a")
			return p
		}(), `series "m\nx"{"g\nk"="1",instance="",job="a","l\nb"="v"} is already pushed by group {"g\nk"="1",job="a"}`},
		{"a duplicate series in the push", func() Push {
			p := fams("{\"d\\ny\"} 1\n{\"d\\ny\"} 2\n")
			p.Key = storetest.Key("job", "b")
			return p
		}(), `duplicate series "d\ny"{`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Push(context.Background(), tt.p)
			if err == nil {
				t.Fatal("the push was accepted")
			}
			if msg := err.Error(); strings.ContainsAny(msg, "\r\n") || !strings.Contains(msg, tt.want) {
				t.Fatalf("error %q: want one line containing %q", msg, tt.want)
			}
		})
	}
}
