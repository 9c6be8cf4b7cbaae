package store

import (
	"slices"
	"strings"
)

// familySet is a group's families sorted by name, one per name. A sorted
// slice takes the place of a map: a group holds about ten families, which
// a map of name to family kept in about 500 bytes a group (5.9 MB of the
// 90 MB heap at 10,000 groups of the bench payload) against 8 bytes a
// family here, and building a group on every push allocated the map's
// table. Lookups are a binary search over those ten names.
type familySet []*Family

// get returns the family called name, or nil.
func (fs familySet) get(name string) *Family {
	if i, ok := fs.find(name); ok {
		return fs[i]
	}
	return nil
}

// find returns where a family called name is, or would be inserted, and
// whether it is there.
func (fs familySet) find(name string) (int, bool) {
	return slices.BinarySearchFunc(fs, name, func(f *Family, name string) int {
		return strings.Compare(f.Name(), name)
	})
}

// put adds f, replacing the family of its name if there is one. It
// changes fs in place: only call it on a set no installed group shares.
func (fs *familySet) put(f *Family) {
	name := f.Name()
	if n := len(*fs); n == 0 || (*fs)[n-1].Name() < name {
		// Families usually come sorted (client libraries gather them
		// so), and then are appended.
		*fs = append(*fs, f)
		return
	}
	i, ok := fs.find(name)
	if ok {
		(*fs)[i] = f
		return
	}
	*fs = slices.Insert(*fs, i, f)
}

// clone returns a copy of fs with room for extra more families.
func (fs familySet) clone(extra int) familySet {
	out := make(familySet, len(fs), len(fs)+extra)
	copy(out, fs)
	return out
}

// counterparts returns, for each family of a, the family of b of the same
// name, or nil, in a's order, appended to buf[:0] (counterpartsOf). Two
// families with the same meta handle have the same name, so a family of b
// that shares its meta with the one of a it is compared with is found
// without reading either name: the families that replace one another
// share it, and each name read follows the handle to the interned meta.
// counterparts and counterpartsOf were 3.9% of the server's CPU at 10,000
// groups of the bench payload before; this was measured only together
// with the skeleton sharing it came with (see repushFamily).
func counterparts(a, b familySet, buf []*Family) []*Family {
	out := buf[:0]
	j := 0
	for _, f := range a {
		var c *Family
		if j < len(b) && b[j].meta == f.meta {
			c = b[j]
		} else {
			j, c = b.seek(j, f.Name())
		}
		if c != nil {
			// The next family of a has a greater name: b[j] is not its.
			j++
		}
		out = append(out, c)
	}
	return out
}

// counterpartsOf returns, for each of the n names name(0), ...,
// name(n-1), sorted, the family of b of that name, or nil, appended to
// buf[:0]. Both are walked side by side: a lookup in b for each name took
// 3.4% of a push's CPU at 10,000 groups, most of it under the store's lock
// (reindex, publish), and 4.1% of a follower's apply (storedGroup). Names
// not sorted are not an error: one that comes out of order finds nil.
func counterpartsOf(n int, name func(int) string, b familySet, buf []*Family) []*Family {
	out := buf[:0]
	j := 0
	for i := range n {
		var c *Family
		j, c = b.seek(j, name(i))
		out = append(out, c)
	}
	return out
}

// seek returns the position of the first family of fs from j on whose
// name is not below name, and that family when it is of that name.
func (fs familySet) seek(j int, name string) (int, *Family) {
	for j < len(fs) && fs[j].Name() < name {
		j++
	}
	if j < len(fs) && fs[j].Name() == name {
		return j, fs[j]
	}
	return j, nil
}
