package web

// Natural order for the UI: label values that differ in a number sort by
// the number's value, so db2 comes before db10 and host-9 before host-10.

import (
	"cmp"
	"strings"

	"github.com/pushgate/pushgate/groupkey"
)

// naturalCompare orders a and b as people read them: runs of ASCII digits
// compare by numeric value, every other byte by its value (UTF-8 byte order
// is code point order). Strings equal in that order but spelt differently
// ("01" and "1") fall back to byte order, so the result is 0 only for equal
// strings and sorting is deterministic.
func naturalCompare(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if !isDigit(a[i]) || !isDigit(b[j]) {
			if a[i] != b[j] {
				return cmp.Compare(a[i], b[j])
			}
			i++
			j++
			continue
		}
		si, sj := i, j
		for i < len(a) && isDigit(a[i]) {
			i++
		}
		for j < len(b) && isDigit(b[j]) {
			j++
		}
		// Compare by value without parsing (a run may exceed any integer
		// type): fewer significant digits is smaller, equal lengths compare
		// bytewise.
		na, nb := strings.TrimLeft(a[si:i], "0"), strings.TrimLeft(b[sj:j], "0")
		if c := cmp.Compare(len(na), len(nb)); c != 0 {
			return c
		}
		if c := strings.Compare(na, nb); c != 0 {
			return c
		}
	}
	if c := cmp.Compare(len(a)-i, len(b)-j); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// compareLabelSets orders two label lists sorted by name, label by label:
// names in byte order, values in natural order; a list that is a prefix of
// the other comes first.
func compareLabelSets(a, b []groupkey.Label) int {
	for i := range min(len(a), len(b)) {
		if c := strings.Compare(a[i].Name, b[i].Name); c != 0 {
			return c
		}
		if c := naturalCompare(a[i].Value, b[i].Value); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}
