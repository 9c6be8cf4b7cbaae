package store

import (
	"strings"
	"testing"
	"time"

	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/internal/storetest"
)

// imported builds an ImportedGroup of key pushed at pushed (failed at
// failed) holding the families of text.
func imported(t *testing.T, k groupkey.Key, pushed, failed time.Time, text string) ImportedGroup {
	t.Helper()
	g := ImportedGroup{Key: k, PushTime: pushed, FailureTime: failed}
	if text != "" {
		for _, mf := range storetest.Families(t, text) {
			g.Families = append(g.Families, ImportedFamily{Family: mf, LastPush: pushed})
		}
	}
	return g
}

func TestImportInstallsOneGroupAfterThePushChecks(t *testing.T) {
	t0, t1 := time.Unix(1_700_000_000, 0), time.Unix(1_700_000_100, 0)
	cases := []struct {
		name string
		g    ImportedGroup
		// wantErr is a text the error must hold, "" for none.
		wantErr string
		// want are lines the scrape must hold; absent, lines it must not.
		want, absent []string
	}{
		{
			name: "a group is installed with its families and both push times",
			g:    imported(t, storetest.Key("job", "b"), t0, t1, "# TYPE y gauge\ny 2\n"),
			want: []string{`y{instance="",job="b"} 2`, `push_time_seconds{instance="",job="b"} 1.7e+09`, `push_failure_time_seconds{instance="",job="b"} 1.7000001e+09`},
		},
		{
			name: "a group replaces the group of the same key",
			g:    imported(t, storetest.Key("job", "a"), t1, time.Time{}, "# TYPE y gauge\ny 3\n"),
			want: []string{`y{instance="",job="a"} 3`}, absent: []string{`x{instance="",job="a"} 1`},
		},
		{
			name:    "a group whose family's type clashes with another group's is refused and nothing changes",
			g:       imported(t, storetest.Key("job", "b"), t1, time.Time{}, "# TYPE x counter\nx 2\n"),
			wantErr: `"x"`,
			want:    []string{`x{instance="",job="a"} 1`}, absent: []string{`job="b"`},
		},
		{
			name:    "a pushed push_time_seconds family is refused",
			g:       imported(t, storetest.Key("job", "b"), t1, time.Time{}, "# TYPE push_time_seconds gauge\npush_time_seconds 5\n"),
			wantErr: "reserved",
			absent:  []string{`job="b"`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{})
			mustPush(t, s, storetest.Key("job", "a"), Replace, "# TYPE x gauge\nx 1\n", t0)
			err := s.Import(tc.g)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("import: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("import: error %v, want one holding %s", err, tc.wantErr)
			}
			text, _ := scrape(t, s)
			for _, w := range tc.want {
				if !strings.Contains(text, w+"\n") {
					t.Errorf("the scrape lacks %s:\n%s", w, text)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(text, a) {
					t.Errorf("the scrape holds %s:\n%s", a, text)
				}
			}
		})
	}
}
