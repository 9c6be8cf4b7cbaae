package store

import (
	"fmt"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// nameEntry is the consistency index's record for one metric name: the type
// every group must use, how many groups hold a family of that name, and which
// group owns each series. It lets a push be checked against the whole store
// in time proportional to the push.
type nameEntry struct {
	typ    dto.MetricType
	groups int
	// series maps the hash (name plus sorted labels) of every series of
	// this name in the store to the number of the group that holds it.
	// Hashes are 64-bit maphash values; a collision between two different
	// series is astronomically unlikely and would only cause a false
	// "duplicate" rejection, never an invalid scrape.
	//
	// Neither key nor value holds a pointer, so the garbage collector never
	// scans these maps: with the group ID (a string) as the value, marking
	// their 760k slots at 10,000 groups of the bench payload was most of the
	// collector's work, and it grew with the store, so the push rate at
	// 100,000 groups fell to 66% of the rate at 1,000. A slot is also 12
	// bytes instead of 24.
	series map[uint64]groupNum
	// builtin marks the gateway's own metric names (go_*, process_*,
	// pushgateway_*): their type is fixed and their HELP wins.
	builtin bool
	help    string
}

// groupNum is a small number standing for a group ID in the index while the
// group holds at least one family. Numbers of removed groups are reused.
type groupNum uint32

// noGroup is the number of a group that holds no family yet.
const noGroup = ^groupNum(0)

// index maps metric names to their entries and numbers the groups.
type index struct {
	names map[string]*nameEntry
	// nums, gids and families number the groups: a group keeps its number
	// while it holds families, and free lists the numbers to reuse.
	nums     map[string]groupNum
	gids     []string
	families []int32
	free     []groupNum
}

func newIndex() *index {
	return &index{names: make(map[string]*nameEntry), nums: make(map[string]groupNum)}
}

// num returns group gid's number, or noGroup if it holds no family.
func (ix *index) num(gid string) groupNum {
	if n, ok := ix.nums[gid]; ok {
		return n
	}
	return noGroup
}

// hold counts one more family of group gid and returns its number, giving
// the group one if it had none.
func (ix *index) hold(gid string) groupNum {
	n, ok := ix.nums[gid]
	if !ok {
		if k := len(ix.free); k > 0 {
			n, ix.free = ix.free[k-1], ix.free[:k-1]
			ix.gids[n] = gid
		} else {
			n = groupNum(len(ix.gids))
			ix.gids = append(ix.gids, gid)
			ix.families = append(ix.families, 0)
		}
		ix.nums[gid] = n
	}
	ix.families[n]++
	return n
}

// release counts one family of group n less and frees the number when the
// group holds none.
func (ix *index) release(n groupNum) {
	ix.families[n]--
	if ix.families[n] > 0 {
		return
	}
	delete(ix.nums, ix.gids[n])
	ix.gids[n] = ""
	ix.free = append(ix.free, n)
}

// add records family f of group gid.
func (ix *index) add(gid string, f *Family) {
	n := ix.hold(gid)
	name := f.Name()
	e := ix.names[name]
	if e == nil {
		e = &nameEntry{typ: f.typ, series: make(map[uint64]groupNum, len(f.series))}
		ix.names[name] = e
	}
	e.groups++
	for _, h := range f.series {
		e.series[h] = n
	}
}

// remove forgets family f of group gid.
func (ix *index) remove(gid string, f *Family) {
	n := ix.num(gid)
	if n == noGroup {
		return
	}
	defer ix.release(n)
	name := f.Name()
	e := ix.names[name]
	if e == nil {
		return
	}
	e.groups--
	for _, h := range f.series {
		if e.series[h] == n {
			delete(e.series, h)
		}
	}
	if e.groups <= 0 && !e.builtin {
		delete(ix.names, name)
	}
}

// typeOf returns the type that name, held in a string or in bytes, has in
// the store once a group holds exactly the families in result instead of
// those in old, and whether the name is present at all. The map lookups
// convert bytes without allocating.
func typeOf[N string | []byte](ix *index, name N, old, result map[string]*Family) (dto.MetricType, bool) {
	if f, ok := result[string(name)]; ok {
		return f.typ, true
	}
	e := ix.names[string(name)]
	if e == nil {
		return 0, false
	}
	others := e.groups
	if _, ok := old[string(name)]; ok {
		others--
	}
	if e.builtin || others > 0 {
		return e.typ, true
	}
	return 0, false
}

// check verifies that replacing the families of group gid (old) by result
// keeps the merged store valid, looking only at the families in changed:
// one type per name across groups, no suffix collisions between a summary or
// histogram and another family, no series owned by another group. owner
// names a group for error messages.
func (ix *index) check(gid string, old, result map[string]*Family, changed []preparedFamily, owner func(gid string) string) error {
	self := ix.num(gid)
	for _, pf := range changed {
		name := pf.mf.GetName()
		typ := pf.mf.GetType()
		if e := ix.names[name]; e != nil {
			others := e.groups
			if _, ok := old[name]; ok {
				others--
			}
			if (e.builtin || others > 0) && e.typ != typ {
				return fmt.Errorf("metric %q is pushed as %s but is a %s in the store", name, typeName(typ), typeName(e.typ))
			}
			// When the group holds these very series already, the index maps
			// every one of them to it: re-pushing the same labels needs no
			// lookup (they were 7% of a push's CPU).
			of := old[name]
			if of == nil || !of.hasSeries(typ, pf.series) {
				for i, h := range pf.series {
					if o, ok := e.series[h]; ok && o != self {
						return fmt.Errorf("series %s is already pushed by group %s", seriesString(name, pf.mf.Metric[i].Label), owner(ix.gids[o]))
					}
				}
			}
		}
		if err := ix.checkSuffixes(name, typ, old, result); err != nil {
			return err
		}
	}
	return nil
}

// checkSuffixes rejects a family whose samples would be confused with those
// of a summary or histogram: X_count, X_sum (and X_bucket for histograms)
// against X, in either direction.
func (ix *index) checkSuffixes(name string, typ dto.MetricType, old, result map[string]*Family) error {
	for _, suffix := range []string{"_count", "_sum", "_bucket"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		bt, ok := typeOf(ix, base, old, result)
		if !ok {
			continue
		}
		if isHistogram(bt) || (bt == dto.MetricType_SUMMARY && suffix != "_bucket") {
			return fmt.Errorf("metric %q collides with the samples of %s %q", name, typeName(bt), base)
		}
	}
	if typ != dto.MetricType_SUMMARY && !isHistogram(typ) {
		return nil
	}
	suffixes := [...]string{"_count", "_sum", "_bucket"}
	n := 2
	if isHistogram(typ) {
		n = 3
	}
	// The suffixed names are built in one stack buffer: concatenating them
	// was three allocations per push of the bench payload.
	var buf [128]byte
	for _, suffix := range suffixes[:n] {
		withSuffix := append(append(buf[:0], name...), suffix...)
		if _, ok := typeOf(ix, withSuffix, old, result); ok {
			return fmt.Errorf("%s %q collides with metric %q", typeName(typ), name, withSuffix)
		}
	}
	return nil
}

func isHistogram(t dto.MetricType) bool {
	return t == dto.MetricType_HISTOGRAM || t == dto.MetricType_GAUGE_HISTOGRAM
}

func typeName(t dto.MetricType) string { return strings.ToLower(t.String()) }
