package web

import (
	"html"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// badgeTexts returns the unescaped text of the label badges in an HTML
// fragment, in order.
func badgeTexts(fragment string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<span class="b[^"]*">([^<]*)</span>`).FindAllStringSubmatch(fragment, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

func TestNaturalCompare(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b string
		want int
	}{
		{"a shorter number is smaller", "db2", "db10", -1},
		{"a longer number is larger", "db10", "db9", 1},
		{"equal strings are equal", "db10", "db10", 0},
		{"numbers compare in the middle of a value", "host-9.example", "host-10.example", -1},
		{"text after equal numbers decides", "a1b", "a1c", -1},
		{"every number in a value counts", "v1.10.0", "v1.9.3", 1},
		{"a number longer than any integer type still compares", "n123456789012345678901234567890", "n123456789012345678901234567891", -1},
		{"leading zeros do not change the value", "db007", "db10", -1},
		{"equal values spelt differently fall back to byte order", "db01", "db1", -1},
		{"a prefix comes first", "db", "db1", -1},
		{"the empty string comes first", "", "a", -1},
		{"text without digits is in byte order", "backup", "batch", -1},
		{"a digit and a letter compare as bytes", "a1", "aa", -1},
		{"non-ASCII text is in code point order", "zürich", "zzz", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := naturalCompare(tc.a, tc.b); got != tc.want {
				t.Errorf("naturalCompare(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
			}
			if got := naturalCompare(tc.b, tc.a); got != -tc.want {
				t.Errorf("naturalCompare(%q, %q) = %d, want %d", tc.b, tc.a, got, -tc.want)
			}
		})
	}
}

func TestNaturalCompareSortsAList(t *testing.T) {
	got := []string{"db10", "db1", "db2", "db01", "db", "db2a", "db10b", "db9"}
	slices.SortFunc(got, naturalCompare)
	if want := "db,db01,db1,db2,db2a,db9,db10,db10b"; strings.Join(got, ",") != want {
		t.Fatalf("sorted %v, want %s", got, want)
	}
}

func TestUIIndexSortsLabelValuesNaturally(t *testing.T) {
	h, st := apiTestHandler(t)
	for _, k := range [][]string{
		{"job", "db10"}, {"job", "db2"}, {"job", "db1"},
		{"job", "db2", "instance", "host-10"}, {"job", "db2", "instance", "host-9"},
		{"job", "db2", "instance", "host-9", "shard", "s10"}, {"job", "db2", "instance", "host-9", "shard", "s2"},
	} {
		apiPushText(t, st, apiT0, "a 1\n", k...)
	}
	page := uiGet(t, h, "/", http.StatusOK)
	var got []string
	for _, row := range strings.Split(page, "<tr")[2:] { // [0] before the table, [1] the header
		got = append(got, strings.Join(badgeTexts(row), " "))
	}
	want := []string{
		`job="db1"`,
		`job="db2"`,
		`job="db2" instance="host-9"`,
		`job="db2" instance="host-9" shard="s2"`,
		`job="db2" instance="host-9" shard="s10"`,
		`job="db2" instance="host-10"`,
		`job="db10"`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestUIGroupSortsSeriesByLabelValuesNaturally(t *testing.T) {
	h, st := apiTestHandler(t)
	apiPushText(t, st, apiT0, `# TYPE free_bytes gauge
free_bytes{disk="sda10"} 1
free_bytes{disk="sda2"} 2
free_bytes{disk="sda1"} 3
free_bytes{disk="sda2",part="p10"} 4
free_bytes{disk="sda2",part="p9"} 5
`, "job", "df")
	page := uiGet(t, h, "/group?key="+encodeGroupParam(st.Groups()[0].Key()), http.StatusOK)
	family := page[strings.Index(page, `id="family-free_bytes"`):]
	family = family[:strings.Index(family, "</section>")]
	var got []string
	for _, row := range strings.Split(family, "<tr>")[2:] { // [0] before the table, [1] the header
		got = append(got, strings.Join(badgeTexts(row), " "))
	}
	want := []string{
		`job="df" instance="" disk="sda1"`,
		`job="df" instance="" disk="sda2"`,
		`job="df" instance="" disk="sda2" part="p9"`,
		`job="df" instance="" disk="sda2" part="p10"`,
		`job="df" instance="" disk="sda10"`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("series\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
