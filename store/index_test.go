package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
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
			a, b := key("job", "a", "instance", "x"), key("job", "b", "instance", "x")
			body := seriesBody(n)
			// Grouping labels differ, so the series differ: both succeed.
			mustPush(t, s, a, Replace, body, t0)
			mustPush(t, s, b, Replace, body, t0)
			// The same group pushing its own series again is no conflict.
			mustPush(t, s, a, Replace, body, t0.Add(time.Second))
			mustPush(t, s, a, Merge, body, t0.Add(2*time.Second))

			// Another group cannot take over one of group a's series; the
			// reason names group a, the series' owner in the index.
			err := push(t, s, key("job", "a", "instance", "x", "s", "0"), Replace, "# TYPE m gauge\nm 1\n", t0.Add(3*time.Second))
			if err == nil || !strings.Contains(err.Error(), `already pushed by group {instance="x",job="a"}`) {
				t.Fatalf("err = %v, want the series named as group a's", err)
			}

			// Once group a is deleted, its series are free.
			if err := s.Delete(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			mustPush(t, s, key("job", "a", "instance", "x", "s", "0"), Replace, "# TYPE m gauge\nm 1\n", t0.Add(4*time.Second))
			if st := s.Stats(); st.Series != n+1+4 {
				t.Errorf("series in the index = %d, want %d", st.Series, n+1+4)
			}
		})
	}
}
