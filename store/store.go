// Package store holds the pushed metric groups: grouping keys, groups and
// their families, the consistency index that checks a push against the whole
// store in time proportional to the push, and the ordered view that scrapes
// stream from.
package store

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"
	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/internal/pipewrite"
	"github.com/pushgate/pushgate/journal"
)

// Options configures a Store.
type Options struct {
	// UTF8Names allows UTF-8 metric and label names.
	UTF8Names bool
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
	// Limits bounds pushes and the store's size; the zero value has none.
	Limits Limits
	// MaxBatchOps, when positive, is the most ops the log takes in one
	// batch (the etcd backend: 127): a bulk delete of more groups is split
	// into batches of at most this many, each atomic on its own.
	MaxBatchOps int
}

// Method says how a push changes its group.
type Method int

const (
	// Replace (PUT) replaces every family of the group.
	Replace Method = iota
	// Merge (POST) replaces only the families named in the push.
	Merge
)

// Push is one push request, already decoded.
type Push struct {
	Key      GroupKey
	Method   Method
	Families []*dto.MetricFamily
	Time     time.Time
	// KnownFields promises that no message of Families holds unknown
	// protobuf fields (exposition.Decoded.KnownFields), so that encoding
	// them need not look. Without it, such fields are kept.
	KnownFields bool
}

// Store is the set of metric groups. It is safe for concurrent use. Changes
// hold one mutex only for work proportional to the change; decoding,
// rendering and waiting for the disk happen outside it.
type Store struct {
	opts    Options
	seed    maphash.Seed
	logger  *slog.Logger
	journal journal.Log
	// render holds the text encoding pushes render for (the one last
	// scraped) and the flate writers gzip scrapes reuse.
	render renderState

	mu      sync.Mutex
	groups  map[string]*Group
	index   *index
	entries *btree.BTreeG[entry]
	// pending holds the changes appended to the journal and not yet known
	// durable, oldest first.
	pending []undo
	// snapshots counts the open snapshots: while there are any, install
	// leaves slots alone (see slot).
	snapshots int
	// deferred holds the same-series updates of slots made while snapshots
	// were open: the slot keeps showing what the open snapshots saw, and the
	// update is applied in place when the last one is released, or moved
	// into a new slot when another snapshot is taken first. Replacing the
	// B-tree entry at once instead (copying its path, shared with the
	// snapshots' clones) made pushes beside a scraper cost more.
	deferred map[*slot]deferredUpdate
	// series is the number of series of all groups, kept by install so that
	// the store limits are checked in O(push).
	series int
	// overridden counts pushed timestamp families (dropTimeFamilies).
	overridden atomic.Uint64
	// applied is the highest log position Apply applied, and
	// applyConflicts counts the changes it applied against the index.
	applied        journal.Position
	applyConflicts uint64
	// skippedFamilies counts the families scrapes left out because they
	// could not be rendered in the scrape's format (SkippedFamilies).
	skippedFamilies atomic.Uint64
}

// entry is one family of one group in the scrape order: by metric name, then
// by group ID.
type entry struct {
	name string
	gid  string
	slot *slot
}

// slot holds what a scrape reads of one family of one group. A push that
// replaces a family by one of the same series, while no snapshot is open,
// updates the family's slot in place instead of replacing the scrape-order
// entry: descending the B-tree for that was 13% of a push's CPU at 100,000
// groups (900,000 entries, every string compare a cache miss). While a
// snapshot is open the update is deferred (Store.deferred), and a snapshot
// taken before it is applied gets it through a new slot in a new entry,
// which the open snapshots' copy-on-write clones do not see: a scrape never
// sees a change made after it started.
type slot struct {
	fam *Family
	// text is fam's text body as its push rendered it.
	text textRef
	// live is false once the slot left the scrape order: its family was
	// removed, or replaced through a new slot.
	live bool
}

// deferredUpdate is a family waiting to be shown by a slot, and the group
// it belongs to.
type deferredUpdate struct {
	fam *Family
	gid string
}

// newSlot returns a live slot holding f.
func newSlot(f *Family) *slot {
	return &slot{fam: f, text: f.pushed, live: true}
}

// textRef is a plain family's text body in one encoding, as the push
// rendered it: the s2 block, the body's length and its encoding. The
// family keeps it, and its slot a copy, so that a text scrape reads the
// slots and the s2 blocks and nothing else: following each family to a
// separate textBody cost two cache misses per family, 18% of a
// 10,000-group text scrape. A scrape in another encoding than the push
// rendered for finds enc differs and asks the family (textBody).
type textRef struct {
	packed []byte
	size   int32
	enc    int8
}

func entryLess(a, b entry) bool {
	if a.name != b.name {
		return a.name < b.name
	}
	return a.gid < b.gid
}

// undo remembers what a not yet durable change replaced, so that a journal
// failure can take it back.
type undo struct {
	commit journal.Commit
	groups []undoGroup
}

type undoGroup struct {
	gid  string
	prev *Group
}

// New returns an empty store.
func New(opts Options) *Store {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{
		opts:    opts,
		seed:    maphash.MakeSeed(),
		logger:  logger,
		groups:  make(map[string]*Group),
		index:   newIndex(opts.UTF8Names),
		entries: btree.NewG[entry](32, entryLess),
	}
	// Three scrapes' worth of idle output buffers (a pipewrite.Writer
	// fills three in turn).
	s.render.buffers = pipewrite.NewPool(9)
	s.index.reserve(PushTimeName, dto.MetricType_GAUGE, pushTimeHelp)
	s.index.reserve(PushFailureTimeName, dto.MetricType_GAUGE, pushFailureTimeHelp)
	return s
}

// SetJournal makes every later change durable in j before it is acknowledged.
// Call it after restoring the journal's records and before serving requests.
func (s *Store) SetJournal(j journal.Log) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.journal = j
}

// Push applies a push. It returns nil once the change is stored (and durable,
// with a journal), a *LimitError when a limit refused it (nothing changed),
// a *RejectError when the push failed the checks, or a *PersistenceError
// when the journal failed.
func (s *Store) Push(ctx context.Context, p Push) error {
	p.Families = s.dropTimeFamilies(p.Key, p.Families)
	prepared, err := prepare(p.Key, p.Families, s.opts.UTF8Names, s.opts.Limits, s.seed)
	if err != nil {
		var lerr *LimitError
		if errors.As(err, &lerr) {
			return err
		}
		return s.recordFailure(ctx, p.Key, p.Time, err)
	}
	fams := make([]*Family, len(prepared))
	enc := s.render.encoding()
	sc := s.render.scratch()
	defer s.render.putScratch(sc)
	for i, pf := range prepared {
		if fams[i], err = newFamily(pf, p.Time, enc, p.KnownFields, sc); err != nil {
			return s.recordFailure(ctx, p.Key, p.Time, err)
		}
	}
	pushFam, pushPrep := s.timeFamily(PushTimeName, p.Key, p.Time, enc, sc)
	gid := p.Key.ID()

	s.mu.Lock()
	old := s.groups[gid]
	ng := &Group{key: p.Key, pushTime: p.Time, families: make(map[string]*Family, len(fams)+2)}
	var oldFams map[string]*Family
	if old != nil {
		oldFams = old.families
		ng.failTime, ng.failReason = old.failTime, old.failReason
		if p.Method == Merge {
			for n, f := range old.families {
				ng.families[n] = f
			}
		}
		ng.families[PushFailureTimeName] = old.families[PushFailureTimeName]
	} else {
		// A new group starts with push_failure_time_seconds 0. Built here,
		// under the lock, because only new groups need it.
		zeroFail, zeroFailPrep := s.timeFamily(PushFailureTimeName, p.Key, time.Time{}, enc, sc)
		ng.families[PushFailureTimeName] = zeroFail
		prepared = append(prepared, pushPrep, zeroFailPrep)
	}
	for _, f := range fams {
		ng.families[f.Name()] = f
	}
	ng.families[PushTimeName] = pushFam
	newGroups := 0
	if old == nil {
		newGroups = 1
	}
	if err := s.opts.Limits.checkStore(len(s.groups), s.series, newGroups, seriesDelta(old, ng)); err != nil {
		s.mu.Unlock()
		return err
	}
	if err := s.index.check(gid, oldFams, ng.families, prepared, s.ownerName); err != nil {
		s.mu.Unlock()
		return s.recordFailure(ctx, p.Key, p.Time, err)
	}
	ticket, err := s.commitLocked([]undoGroup{{gid: gid, prev: old}}, []*Group{ng}, journal.Op{Kind: journal.OpSet, Key: gid, Value: s.journalValue(ng)})
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.wait(ctx, ticket)
}

// dropTimeFamilies removes pushed push_time_seconds and
// push_failure_time_seconds families: as in the reference, the gateway's own
// values replace them and the push goes on. Each is counted
// (OverriddenFamilies) and logged at debug.
func (s *Store) dropTimeFamilies(key GroupKey, families []*dto.MetricFamily) []*dto.MetricFamily {
	for i := 0; i < len(families); i++ {
		name := families[i].GetName()
		if name != PushTimeName && name != PushFailureTimeName {
			continue
		}
		s.overridden.Add(1)
		s.logger.Debug("pushed family replaced by the gateway's own", "group", key.String(), "family", name)
		families = append(families[:i:i], families[i+1:]...)
		i--
	}
	return families
}

// OverriddenFamilies returns how many pushed push_time_seconds and
// push_failure_time_seconds families the gateway's own values replaced.
func (s *Store) OverriddenFamilies() uint64 { return s.overridden.Load() }

// recordFailure sets the group's push_failure_time_seconds for a rejected
// push and returns the rejection. An absent group is created with
// push_time_seconds 0, as the reference does — unless creating it would
// itself collide with another group's series: a rejected push never makes the
// store inconsistent.
func (s *Store) recordFailure(ctx context.Context, key GroupKey, at time.Time, reason error) error {
	rej := &RejectError{Key: key, Reason: reason.Error()}
	enc := s.render.encoding()
	gid := key.ID()

	s.mu.Lock()
	old := s.groups[gid]
	var ng *Group
	if old != nil {
		ng = old.clone()
		ng.failTime, ng.failReason = at, rej.Reason
		ng.families[PushFailureTimeName], _ = s.timeFamily(PushFailureTimeName, key, at, enc, nil)
	} else {
		ng = &Group{key: key, failTime: at, failReason: rej.Reason, families: make(map[string]*Family, 2)}
		prepared := s.addTimeFamilies(ng, nil, enc, nil)
		err := s.opts.Limits.checkStore(len(s.groups), s.series, 1, seriesDelta(nil, ng))
		if err == nil {
			err = s.index.check(gid, nil, ng.families, prepared, s.ownerName)
		}
		if err != nil {
			s.mu.Unlock()
			// Debug: a client can cause this at will, so it must not flood the log.
			s.logger.Debug("failure time not recorded: the group cannot be created", "group", key.String(), "reason", err)
			return rej
		}
	}
	ticket, err := s.commitLocked([]undoGroup{{gid: gid, prev: old}}, []*Group{ng}, journal.Op{Kind: journal.OpSet, Key: gid, Value: s.journalValue(ng)})
	s.mu.Unlock()
	if err == nil {
		err = s.wait(ctx, ticket)
	}
	if err != nil {
		s.logger.Error("failure time not recorded", "group", key.String(), "err", err)
	}
	return rej
}

// Delete removes the group with the given key. Deleting an absent group is
// not an error.
func (s *Store) Delete(ctx context.Context, key GroupKey) error {
	gid := key.ID()
	s.mu.Lock()
	old := s.groups[gid]
	if old == nil {
		s.mu.Unlock()
		return nil
	}
	ticket, err := s.commitLocked([]undoGroup{{gid: gid, prev: old}}, []*Group{nil}, journal.Op{Kind: journal.OpDelete, Key: gid})
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.wait(ctx, ticket)
}

// Wipe removes every group at once: no push is applied between the first
// and the last removal.
func (s *Store) Wipe(ctx context.Context) error {
	s.mu.Lock()
	undos := make([]undoGroup, 0, len(s.groups))
	next := make([]*Group, 0, len(s.groups))
	for gid, g := range s.groups {
		undos = append(undos, undoGroup{gid: gid, prev: g})
		next = append(next, nil)
	}
	ticket, err := s.commitLocked(undos, next, journal.Op{Kind: journal.OpDeleteAll})
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.wait(ctx, ticket)
}

// commitLocked installs the new groups (nil removes) and appends ops to the
// journal as one atomic batch. If the journal refuses the append, the change
// is undone at once. s.mu must be held.
func (s *Store) commitLocked(undos []undoGroup, next []*Group, ops ...journal.Op) (journal.Commit, error) {
	for i, u := range undos {
		s.install(u.gid, u.prev, next[i])
	}
	if s.journal == nil {
		return nil, nil
	}
	c, err := s.journal.Append(ops...)
	if err != nil {
		s.rollback([]undo{{groups: undos}})
		return nil, &PersistenceError{Err: err}
	}
	s.pending = append(s.pending, undo{commit: c, groups: undos})
	return c, nil
}

// wait blocks until c is durable. If it failed, its change is rolled back,
// with every change appended after it (which the log will not make durable
// either, and which were checked against it), newest first; changes
// appended before it are left to their own waiters.
func (s *Store) wait(ctx context.Context, c journal.Commit) error {
	if c == nil {
		return nil
	}
	err := c.Wait(ctx)
	if err != nil && ctx.Err() != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := slices.IndexFunc(s.pending, func(u undo) bool { return u.commit == c })
	if err == nil {
		// Batches become durable in order: c and every batch before it
		// are durable now.
		if k >= 0 {
			s.pending = slices.Delete(s.pending, 0, k+1)
		}
		return nil
	}
	if k >= 0 {
		s.rollback(s.pending[k:])
		s.pending = s.pending[:k]
	}
	return &PersistenceError{Err: err}
}

// rollback takes back the changes of us, newest first. s.mu must be held.
func (s *Store) rollback(us []undo) {
	for i := len(us) - 1; i >= 0; i-- {
		for j := len(us[i].groups) - 1; j >= 0; j-- {
			ug := us[i].groups[j]
			s.install(ug.gid, s.groups[ug.gid], ug.prev)
		}
	}
}

// install replaces group gid's state old by next (nil: absent) in the group
// map, the consistency index and the scrape order. Families shared by old and
// next are left alone, so the cost is that of the change. It keeps the
// series total. s.mu must be held.
//
// A family replaced by one of the same name, type and series (a batch job
// pushing new values for the same labels, the common case) keeps its index
// entries as they are and its slot (updated now, or when the open snapshots
// are released): removing and re-adding 74 series and replacing the B-tree
// entry was a quarter of the push's time under the lock, and more at
// 100,000 groups, where every one of those map and tree operations misses
// the CPU cache.
func (s *Store) install(gid string, old, next *Group) {
	if old != nil {
		for name, f := range old.families {
			var nf *Family
			if next != nil {
				nf = next.families[name]
			}
			if nf == f || (nf != nil && f.hasSeries(nf.typ, nf.series, nf.labels)) {
				continue
			}
			s.series -= f.SeriesCount()
			s.index.remove(gid, f)
			if nf == nil {
				if gone, ok := s.entries.Delete(entry{name: name, gid: gid}); ok {
					s.retire(gone.slot)
				}
			}
		}
	}
	if next == nil {
		delete(s.groups, gid)
		return
	}
	for name, f := range next.families {
		var of *Family
		if old != nil {
			of = old.families[name]
		}
		if of == f {
			continue
		}
		same := of != nil && of.hasSeries(f.typ, f.series, f.labels)
		if !same {
			s.series += f.SeriesCount()
			s.index.add(gid, f)
		}
		if same && of.slot != nil && of.slot.live && s.shownBy(of.slot) == of {
			sl := of.slot
			f.slot = sl
			if s.snapshots == 0 {
				sl.fam, sl.text = f, f.pushed
				continue
			}
			if s.deferred == nil {
				s.deferred = make(map[*slot]deferredUpdate)
			}
			s.deferred[sl] = deferredUpdate{fam: f, gid: gid}
			continue
		}
		s.replaceSlot(name, gid, f)
	}
	s.groups[gid] = next
}

// shownBy returns the family sl shows, or will show once its deferred
// update is applied. s.mu must be held.
func (s *Store) shownBy(sl *slot) *Family {
	if d, ok := s.deferred[sl]; ok {
		return d.fam
	}
	return sl.fam
}

// replaceSlot puts f into a new slot of the scrape order, replacing the
// entry of its name and group if there is one. s.mu must be held.
func (s *Store) replaceSlot(name, gid string, f *Family) {
	f.slot = newSlot(f)
	if prev, ok := s.entries.ReplaceOrInsert(entry{name: name, gid: gid, slot: f.slot}); ok {
		s.retire(prev.slot)
	}
}

// retire marks a slot that left the scrape order, and forgets its deferred
// update. s.mu must be held.
func (s *Store) retire(sl *slot) {
	sl.live = false
	delete(s.deferred, sl)
}

// applyDeferred applies the deferred slot updates: in place when no
// snapshot is open, else through new slots, so that the open snapshots keep
// what they saw. s.mu must be held.
func (s *Store) applyDeferred() {
	for sl, d := range s.deferred {
		switch {
		case !sl.live:
		case s.snapshots == 0:
			sl.fam, sl.text = d.fam, d.fam.pushed
		default:
			// replaceSlot retires sl, deleting it from the map being
			// ranged over, which Go allows.
			s.replaceSlot(d.fam.Name(), d.gid, d.fam)
		}
	}
	clear(s.deferred)
}

// ownerName names group gid for error messages. s.mu must be held.
func (s *Store) ownerName(gid string) string {
	if g := s.groups[gid]; g != nil {
		return g.key.String()
	}
	return fmt.Sprintf("%q", gid)
}

// Groups returns every group, sorted by grouping key.
func (s *Store) Groups() []*Group {
	s.mu.Lock()
	out := make([]*Group, 0, len(s.groups))
	for _, g := range s.groups {
		out = append(out, g)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].key.id < out[j].key.id })
	return out
}

// Group returns the group with the given key, or nil.
func (s *Store) Group(key GroupKey) *Group {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.groups[key.ID()]
}

// Stats is a summary of the store's size.
type Stats struct {
	Groups, Families, Series int
}

// Stats counts groups, families and series in O(1), from running totals.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Groups: len(s.groups), Families: s.entries.Len(), Series: s.series}
}

// SkippedFamilies returns how many times a scrape left a stored family (or
// one of the gateway's own) out because it could not be rendered in the
// scrape's format, so that the scrape stayed whole and valid. Pushes refuse
// such families, so it stays 0 unless something slipped through.
func (s *Store) SkippedFamilies() uint64 { return s.skippedFamilies.Load() }

// Limits returns the limits the store enforces.
func (s *Store) Limits() Limits { return s.opts.Limits }

// DeleteWhere removes, in one atomic change, every group for which match
// returns true, and returns their keys sorted. With dryRun it only returns
// the keys. match runs under the store's lock and must be quick. With
// Options.MaxBatchOps, more groups than that are removed in several atomic
// changes, appended at once: no push lands between them in the log, but a
// failed one leaves the groups of the batches before it deleted.
func (s *Store) DeleteWhere(ctx context.Context, match func(*Group) bool, dryRun bool) ([]GroupKey, error) {
	s.mu.Lock()
	var (
		keys  []GroupKey
		undos []undoGroup
		ops   []journal.Op
	)
	for gid, g := range s.groups {
		if !match(g) {
			continue
		}
		keys = append(keys, g.key)
		undos = append(undos, undoGroup{gid: gid, prev: g})
		ops = append(ops, journal.Op{Kind: journal.OpDelete, Key: gid})
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].id < keys[j].id })
	if dryRun || len(keys) == 0 {
		s.mu.Unlock()
		return keys, nil
	}
	size := len(ops)
	if s.opts.MaxBatchOps > 0 {
		size = s.opts.MaxBatchOps
	}
	var tickets []journal.Commit
	for start := 0; start < len(ops); start += size {
		end := min(start+size, len(ops))
		ticket, err := s.commitLocked(undos[start:end], make([]*Group, end-start), ops[start:end]...)
		if err != nil {
			s.mu.Unlock()
			// The batches appended before this one fail with it or were
			// rolled back by their own waits.
			for _, t := range tickets {
				_ = s.wait(ctx, t)
			}
			return nil, err
		}
		tickets = append(tickets, ticket)
	}
	s.mu.Unlock()
	var firstErr error
	for _, t := range tickets {
		if err := s.wait(ctx, t); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return keys, firstErr
}
