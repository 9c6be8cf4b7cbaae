package store

import (
	"fmt"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/seriesid"
)

// nameEntry is the consistency index's record for one metric name: the type
// every group must use, how many groups hold a family of that name, and which
// group owns each series. It lets a push be checked against the whole store
// in time proportional to the push.
type nameEntry struct {
	typ    dto.MetricType
	groups int
	// series maps the hash (name plus sorted labels) of every series of
	// this name in the store to the number of the group that holds it, in
	// a table of its own (seriesOwners: 17 bytes an entry over the filled
	// bench store, against ~35 for a Go map).
	// Hashes are 64-bit maphash values; a collision between two different
	// series is astronomically unlikely and would only cause a false
	// "duplicate" rejection, never an invalid scrape.
	//
	// Neither key nor value holds a pointer, so the garbage collector never
	// scans these tables: with the group ID (a string) as the value, marking
	// their 760k slots at 10,000 groups of the bench payload was most of the
	// collector's work, and it grew with the store, so the push rate at
	// 100,000 groups fell to 66% of the rate at 1,000.
	series seriesOwners
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
	// claims maps every name a stored family exposes under every checked
	// escaping (seriesid.Claims) to the family's metric name, so that a new name
	// is checked against all others in time proportional to its claims.
	claims map[string]string
	// schemes are the escapings claims are made under (seriesid.ClaimSchemes).
	schemes []model.EscapingScheme
	// labels is kept under the UTF-8 name rules only (nil otherwise): it
	// maps every stored label name as each escaping writes it
	// (seriesid.LabelKey) to the name and the number of families holding
	// it.
	labels map[string]*labelEntry
	// nums, gids and families number the groups: a group keeps its number
	// while it holds families, and free lists the numbers to reuse.
	nums     map[string]groupNum
	gids     []string
	families []int32
	free     []groupNum
}

// labelEntry is the index's record of one label name under one escaping.
type labelEntry struct {
	name string
	refs int
}

func newIndex(utf8Names bool) *index {
	ix := &index{
		names:   make(map[string]*nameEntry),
		nums:    make(map[string]groupNum),
		claims:  make(map[string]string),
		schemes: seriesid.ClaimSchemes(utf8Names),
	}
	if utf8Names {
		ix.labels = make(map[string]*labelEntry)
	}
	return ix
}

// Reserve registers the gateway's own metric families: pushed families of
// the same names must have the same type, the built-in HELP wins, and no
// pushed family may expose a name one of them exposes (seriesid.Claims).
// Call it before serving, with every family the gateway can ever expose.
func (s *Store) Reserve(builtin []*dto.MetricFamily) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, mf := range builtin {
		s.index.reserve(mf.GetName(), mf.GetType(), mf.GetHelp())
	}
}

// reserve records a name of the gateway's own: its type is fixed, its HELP
// wins, and its claims stay while the gateway runs. Own names may claim the
// same name as each other (the Go collector's go_memstats_alloc_bytes
// gauge and go_memstats_alloc_bytes_total counter); the first keeps it.
func (ix *index) reserve(name string, typ dto.MetricType, help string) {
	e := ix.names[name]
	if e == nil {
		e = &nameEntry{typ: typ}
		ix.names[name] = e
		ix.claim(name, typ)
	}
	e.builtin = true
	e.help = help
}

// claim records the claims of a name new to the store.
func (ix *index) claim(name string, typ dto.MetricType) {
	for _, c := range seriesid.Claims(name, typ, ix.schemes) {
		if _, taken := ix.claims[c]; !taken {
			ix.claims[c] = name
		}
	}
}

// unclaim forgets the claims of a name that left the store.
func (ix *index) unclaim(name string, typ dto.MetricType) {
	for _, c := range seriesid.Claims(name, typ, ix.schemes) {
		if ix.claims[c] == name {
			delete(ix.claims, c)
		}
	}
}

// holdLabels counts one more family holding each of names.
func (ix *index) holdLabels(names []string) {
	if ix.labels == nil {
		return
	}
	for _, n := range names {
		for _, s := range seriesid.LabelSchemes() {
			k := seriesid.LabelKey(n, s)
			le := ix.labels[k]
			if le == nil {
				le = &labelEntry{name: n}
				ix.labels[k] = le
			}
			if le.name == n {
				le.refs++
			}
		}
	}
}

// releaseLabels counts one family less holding each of names.
func (ix *index) releaseLabels(names []string) {
	if ix.labels == nil {
		return
	}
	for _, n := range names {
		for _, s := range seriesid.LabelSchemes() {
			k := seriesid.LabelKey(n, s)
			if le := ix.labels[k]; le != nil && le.name == n {
				if le.refs--; le.refs <= 0 {
					delete(ix.labels, k)
				}
			}
		}
	}
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
		e = &nameEntry{typ: f.Type(), series: makeSeriesOwners(len(f.series()))}
		ix.names[name] = e
		ix.claim(name, f.Type())
	}
	e.groups++
	for _, h := range f.series() {
		e.series.set(h, n)
	}
	ix.holdLabels(f.labelNames())
}

// remove forgets family f of group gid.
func (ix *index) remove(gid string, f *Family) {
	n := ix.num(gid)
	if n == noGroup {
		return
	}
	defer ix.release(n)
	ix.releaseLabels(f.labelNames())
	name := f.Name()
	e := ix.names[name]
	if e == nil {
		return
	}
	e.groups--
	// A hash the index maps to another group is that group's series: it
	// stays.
	for _, h := range f.series() {
		if o, ok := e.series.get(h); ok && o == n {
			e.series.delete(h)
		}
	}
	if e.groups <= 0 && !e.builtin {
		delete(ix.names, name)
		ix.unclaim(name, e.typ)
	}
}

// live reports whether a family of name stays in the store once group
// families old are replaced by result.
func (ix *index) live(name string, old, result familySet) bool {
	if result.get(name) != nil {
		return true
	}
	e := ix.names[name]
	if e == nil {
		return false
	}
	others := e.groups
	if old.get(name) != nil {
		others--
	}
	return e.builtin || others > 0
}

// check verifies that replacing the families of group gid (old) by result
// keeps the merged store valid, looking only at the families in changed:
// one type per name across groups, no series owned by another group, no
// two names exposing one name (seriesid.Claims), and under the UTF-8 name
// rules no two label names written alike by some escaping. owner names a group for
// error messages.
func (ix *index) check(gid string, old, result familySet, changed []admission.Family, owner func(gid string) string) error {
	self := ix.num(gid)
	var local pushClaims
	for _, pf := range changed {
		name := pf.MF.GetName()
		typ := pf.MF.GetType()
		of := old.get(name)
		e := ix.names[name]
		if e != nil {
			others := e.groups
			if of != nil {
				others--
			}
			if (e.builtin || others > 0) && e.typ != typ {
				return fmt.Errorf("metric %q is pushed as %s but is a %s in the store", name, typeName(typ), typeName(e.typ))
			}
			// When the group holds these very series already, the index maps
			// every one of them to it: re-pushing the same labels needs no
			// lookup (they were 7% of a push's CPU).
			if of == nil || !of.hasSeries(typ, pf.Series, pf.Labels) {
				for i, h := range pf.Series {
					if o, ok := e.series.get(h); ok && o != self {
						series := fmt.Sprintf("%q", name)
						if i < len(pf.MF.Metric) {
							series = seriesid.String(name, pf.MF.Metric[i].Label)
						}
						return fmt.Errorf("series %s is already pushed by group %s", series, owner(ix.gids[o]))
					}
				}
			}
		}
		// A name the store holds elsewhere has its claims checked already.
		if e == nil || !ix.live(name, old, nil) {
			if err := ix.checkClaims(name, typ, old, result, &local); err != nil {
				return err
			}
		}
		if ix.labels != nil && (of == nil || !of.hasSeries(typ, pf.Series, pf.Labels)) {
			if err := ix.checkLabels(name, pf.Labels, old, result, &local); err != nil {
				return err
			}
		}
	}
	return nil
}

// pushClaims holds the claims and label keys of one push's families, so
// that two families of one push are checked against each other too.
type pushClaims struct {
	claims, labels map[string]string
}

// checkClaims rejects a name new to the store when one of the names it
// exposes is exposed by a family of another name that stays.
func (ix *index) checkClaims(name string, typ dto.MetricType, old, result familySet, local *pushClaims) error {
	if local.claims == nil {
		local.claims = make(map[string]string)
	}
	for _, c := range seriesid.Claims(name, typ, ix.schemes) {
		other, ok := ix.claims[c]
		if !ok || other == name || !ix.live(other, old, result) {
			other, ok = local.claims[c]
		}
		if ok && other != name {
			return fmt.Errorf("%s %q collides with %s %q: both would expose %s", typeName(typ), name, ix.typeOf(other, result), other, seriesid.DescribeClaim(c))
		}
		local.claims[c] = name
	}
	return nil
}

// typeOf names the type of a family the store or the push holds.
func (ix *index) typeOf(name string, result familySet) string {
	if f := result.get(name); f != nil {
		return typeName(f.Type())
	}
	if e := ix.names[name]; e != nil {
		return typeName(e.typ)
	}
	return "metric"
}

// checkLabels rejects label names of a family that some escaping writes
// like another label name the store or the push holds.
func (ix *index) checkLabels(metric string, names []string, old, result familySet, local *pushClaims) error {
	if local.labels == nil {
		local.labels = make(map[string]string)
	}
	for _, n := range names {
		for _, s := range seriesid.LabelSchemes() {
			k := seriesid.LabelKey(n, s)
			other := ""
			if le := ix.labels[k]; le != nil && le.name != n && le.refs > replacedHolding(le.name, old, result) {
				other = le.name
			} else if ln, ok := local.labels[k]; ok && ln != n {
				other = ln
			}
			if other != "" {
				return fmt.Errorf("metric %q: label name %q collides with label name %q: both are written %q under escaping=%s", metric, n, other, k[1:], s)
			}
			local.labels[k] = n
		}
	}
	return nil
}

// replacedHolding counts the families of old that result replaces or drops
// and that hold label name n: the index counts them, but they go.
func replacedHolding(n string, old, result familySet) int {
	count := 0
	for _, f := range old {
		if result.get(f.Name()) != f && slices.Contains(f.labelNames(), n) {
			count++
		}
	}
	return count
}

func typeName(t dto.MetricType) string { return strings.ToLower(t.String()) }
