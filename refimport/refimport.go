// Package refimport decides what of a reference Pushgateway persistence file
// goes into a store, and in what order. The reference loads its file without
// checks, so the file can hold groups that conflict (the store it served then
// failed every scrape); pushgate checks every group like a push, and this
// package keeps as much of the pushed data as those checks allow, logging
// what it leaves out. Reading the file is journal/gobfile's job; installing
// one checked group is the store's (store.Store.Import).
package refimport

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/journal/gobfile"
	"github.com/pushgate/pushgate/store"
)

// Result counts what Import did with a reference file's groups.
type Result struct {
	// Groups is the number of groups imported whole.
	Groups int
	// Partial is the number of groups imported without some of their
	// families (each dropped family is logged).
	Partial int
	// Merged is the number of groups whose families went, where they fit,
	// into an imported group that is the same group to Prometheus (their
	// grouping keys differ only by labels with empty values).
	Merged int
	// DroppedGroups is the number of groups of which nothing was imported
	// (each is logged with its key and the reason).
	DroppedGroups int
	// DroppedFamilies is the number of pushed families left out, dropped
	// groups' included.
	DroppedFamilies int
}

// Import loads groups read from a reference Pushgateway persistence file
// into st. Their push_time_seconds and push_failure_time_seconds families
// become the groups' push times. Every group goes through the same checks as
// a push (store.Store.Import), and a group that fails them cannot be
// imported as it is.
//
// Conflicts are resolved so that no pushed data is lost that could be kept:
// groups holding pushed families are imported before groups holding only
// push times (such as the empty group a rejected push leaves behind), the
// most recently pushed first; a group that does not fit whole is imported
// with as many of its families as fit; and a group whose key equals an
// imported group's but for labels with empty values (the same series to
// Prometheus) adds its families to that group where they fit. Every group
// and family left out is logged to logger at warning level with its key and
// reason.
func Import(st *store.Store, groups []gobfile.Group, logger *slog.Logger) Result {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	im := importer{st: st, logger: logger}
	imported := make([]store.ImportedGroup, 0, len(groups))
	for _, rg := range groups {
		imported = append(imported, importedGroup(rg))
	}
	slices.SortStableFunc(imported, importOrder)

	var res Result
	// byIdentity holds each imported group as it was installed, by the ID
	// of its key without empty-valued labels.
	byIdentity := make(map[string]*store.ImportedGroup, len(imported))
	for _, g := range imported {
		identity := identityID(g.Key)
		if base := byIdentity[identity]; base != nil {
			kept, dropped := im.addFamilies(base, g.Families, g.Key)
			res.DroppedFamilies += dropped
			switch {
			case kept > 0:
				res.Merged++
				logger.Warn("imported group merged into the same group to Prometheus", "group", g.Key.String(), "into", base.Key.String(), "families_kept", kept, "families_dropped", dropped)
			case len(g.Families) == 0:
				res.DroppedGroups++
				logger.Warn("imported group dropped", "group", g.Key.String(),
					"reason", fmt.Sprintf("it holds only push times, and for Prometheus they are those of group %s, which holds pushed data or was pushed more recently", base.Key))
			default:
				res.DroppedGroups++
				logger.Warn("imported group dropped", "group", g.Key.String(),
					"reason", fmt.Sprintf("none of its families fit into group %s, the same group for Prometheus, imported first", base.Key), "families", len(g.Families))
			}
			continue
		}
		if err := st.Import(g); err == nil {
			res.Groups++
			byIdentity[identity] = &g
			continue
		}
		// Not whole: its push times alone, then each family that fits.
		base := g
		base.Families = nil
		if err := st.Import(base); err != nil {
			res.DroppedGroups++
			res.DroppedFamilies += len(g.Families)
			logger.Warn("imported group dropped", "group", g.Key.String(), "reason", err.Error(), "families", len(g.Families))
			continue
		}
		_, dropped := im.addFamilies(&base, g.Families, g.Key)
		res.DroppedFamilies += dropped
		res.Partial++
		byIdentity[identity] = &base
	}
	return res
}

// importer holds what Import's steps share: the store filled and the logger
// told of every group and family left out.
type importer struct {
	st     *store.Store
	logger *slog.Logger
}

// importOrder orders groups for Import: groups with pushed families first,
// then the most recent successful push first, then by key.
func importOrder(a, b store.ImportedGroup) int {
	if ad, bd := len(a.Families) > 0, len(b.Families) > 0; ad != bd {
		if ad {
			return -1
		}
		return 1
	}
	if c := b.PushTime.Compare(a.PushTime); c != 0 {
		return c
	}
	return strings.Compare(a.Key.ID(), b.Key.ID())
}

// identityID returns the ID of key without its empty-valued labels: two
// keys with the same identity ID give the same series to Prometheus.
func identityID(key groupkey.Key) string {
	labels := make(map[string]string, len(key.Labels()))
	for _, l := range key.Labels() {
		if l.Value != "" {
			labels[l.Name] = l.Value
		}
	}
	return groupkey.New(labels).ID()
}

// addFamilies adds to the installed group base, one at a time, each of
// fams (from the group from) whose name base lacks and that passes the
// checks, reinstalling base each time; the others are logged and left out.
// It returns how many were kept and dropped.
func (im importer) addFamilies(base *store.ImportedGroup, fams []store.ImportedFamily, from groupkey.Key) (kept, dropped int) {
	for _, f := range fams {
		name := f.Family.GetName()
		if slices.ContainsFunc(base.Families, func(b store.ImportedFamily) bool { return b.Family.GetName() == name }) {
			dropped++
			im.logger.Warn("imported family dropped", "group", from.String(), "family", name,
				"reason", fmt.Sprintf("group %s, imported first, holds a family of that name", base.Key))
			continue
		}
		next := *base
		next.Families = append(slices.Clip(base.Families), f)
		if err := im.st.Import(next); err != nil {
			dropped++
			im.logger.Warn("imported family dropped", "group", from.String(), "family", name, "reason", err.Error())
			continue
		}
		*base = next
		kept++
	}
	return kept, dropped
}
