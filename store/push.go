package store

import (
	"bytes"
	"context"
	"errors"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupcodec"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/journal"
)

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
	Key      groupkey.Key
	Method   Method
	Families []*dto.MetricFamily
	Time     time.Time
	// KnownFields promises that no message of Families holds unknown
	// protobuf fields (exposition.Decoded.KnownFields), so that encoding
	// them need not look. Without it, such fields are kept.
	KnownFields bool
	// States gives pushed families a state by family name (see
	// headstate.go); a pushed family without one has none, whatever it
	// had before.
	States map[string][]byte
	// Expect, when set, makes the push apply only while the group is
	// still in the head state HeadStates returned it with; otherwise it
	// fails with ErrHeadChanged and changes nothing.
	Expect *Head
	// Disposable promises that Families are not read once Push returns:
	// the store may then leave their label sets in buffers it reuses
	// (admission.CheckWith) instead of allocating them for every push.
	Disposable bool
	// Source is the decoded body Families came from, when the caller
	// has it: with Disposable, a text body then gives the group a
	// template (exposition.TextTemplate) that the group's next pushes of
	// the same shape are applied from (PushText).
	Source *exposition.Decoded
}

// Push applies a push. It is checked against the head (committed and pending
// changes) and returns once the change is committed (durable, with a
// journal) and published, with the position of its commit; an
// *admission.Error when a stage of admission refused it (a Refused push
// records the group's failure time, nothing else changes), or a
// *PersistenceError when the journal failed (nothing was published).
func (s *Store) Push(ctx context.Context, p Push) (journal.Position, error) {
	pos, err := s.push(ctx, p)
	var rej *admission.Error
	if errors.As(err, &rej) && rej.Class == admission.Refused {
		s.recordFailure(ctx, p.Key, p.Time, rej.Msg)
	}
	return pos, err
}

// push is Push, without recording a refusal: every error that refuses the
// push is an *admission.Error.
func (s *Store) push(ctx context.Context, p Push) (journal.Position, error) {
	pushed := len(p.Families)
	p.Families = s.dropTimeFamilies(p.Key, p.Families)
	sc := s.render.scratch()
	defer s.render.putScratch(sc)
	var checkScratch *admission.Scratch
	if p.Disposable {
		checkScratch = &sc.check
	}
	prepared, err := prepare(p.Key, p.Families, s.opts.UTF8Names, s.opts.Limits, s.seed, checkScratch)
	if err != nil {
		return 0, err
	}
	fams := make([]*Family, len(prepared))
	gid := p.Key.ID()
	enc, textScrapes := s.render.encoding(), s.render.TextScrapes()
	s.mu.Lock()
	old := s.headGroup(gid)
	s.mu.Unlock()
	if !s.renderAtPush(old, p.Time, textScrapes) {
		// The protobuf encoding renders no text body (render.Cache.Fill).
		enc = exposition.EncodingProtobuf
	}
	at := groupcodec.UnixNanos(p.Time)
	for i, pf := range prepared {
		if fams[i], err = newFamily(pf, at, enc, p.KnownFields, sc); err != nil {
			return 0, admission.Refusal(err)
		}
		if st := p.States[fams[i].Name()]; len(st) > 0 {
			fams[i].extra = newExtra(fams[i].labelNames(), bytes.Clone(st))
		}
	}
	var tmpl *exposition.TextTemplate
	if p.Source != nil && p.Disposable && len(p.Families) == pushed && len(p.States) == 0 {
		// After newFamily: building a template overwrites the values.
		tmpl = s.templates.find(p.Source, prepared, sc)
	}
	return s.installPush(ctx, p, installing{fams: fams, prepared: prepared, enc: enc, textScrapes: textScrapes, tmpl: tmpl}, sc)
}

// installing is what a push installs besides its Push: its families as
// the store keeps them, what admission made of them (for the index's
// check), the text encoding they were rendered in, render.State's text
// scrape count when the push began, and the template of its body (nil for
// none). from, when set, is the head group the families were built from
// (a push that reused its template): the push then installs only while
// that group is still the head's.
type installing struct {
	fams        []*Family
	prepared    []admission.Family
	enc         exposition.Encoding
	textScrapes uint64
	tmpl        *exposition.TextTemplate
	from        *Group
	// skeletons says whether the families were kept as skeletons and value
	// areas (PushText), as the time family written from from's is.
	skeletons bool
}

// errStale is installPush's answer when the head group changed since the
// families were built from it (installing.from): nothing was installed.
var errStale = errors.New("the group changed while the push was built from it")

// installPush installs a built push: under the store's lock it adds the time
// families, checks capacity and the index, and commits the new group;
// then it waits for the commit.
func (s *Store) installPush(ctx context.Context, p Push, in installing, sc *scratch) (journal.Position, error) {
	gid := p.Key.ID()
	fams, prepared, enc := in.fams, in.prepared, in.enc
	pushFam, pushPrep, _ := s.nextTimeFamily(in.from, PushTimeName, p.Key, groupcodec.UnixNanos(p.Time), enc, in.skeletons, sc)

	s.mu.Lock()
	if p.Expect != nil && !p.Expect.holds(s, gid) {
		s.mu.Unlock()
		return 0, ErrHeadChanged
	}
	old := s.headGroup(gid)
	if in.from != nil && old != in.from {
		s.mu.Unlock()
		return 0, errStale
	}
	ng := &Group{key: p.Key, pushTime: p.Time, families: make(familySet, 0, len(fams)+2), textScrapes: in.textScrapes, tmpl: in.tmpl}
	var oldFams familySet
	if old != nil {
		oldFams = old.families
		ng.failTime, ng.failReason = old.failTime, old.failReason
		if p.Method == Merge {
			ng.families = old.families.clone(len(fams) + 2)
		}
		ng.families.put(old.families.get(PushFailureTimeName))
	} else {
		// A new group starts with push_failure_time_seconds 0. Built here,
		// under the lock, because only new groups need it.
		zeroFail, zeroFailPrep := s.timeFamily(PushFailureTimeName, p.Key, 0, enc, sc)
		ng.families.put(zeroFail)
		prepared = append(prepared, pushPrep, zeroFailPrep)
	}
	for _, f := range fams {
		ng.families.put(f)
	}
	ng.families.put(pushFam)
	newGroups := 0
	if old == nil {
		newGroups = 1
	}
	if err := admission.Capacity(s.opts.Limits, s.headGroups, s.series, newGroups, seriesDelta(old, ng)); err != nil {
		s.mu.Unlock()
		return 0, err
	}
	if err := s.index.check(gid, oldFams, ng.families, prepared, s.ownerName); err != nil {
		s.mu.Unlock()
		return 0, admission.Refusal(err)
	}
	value, err := s.journalValue(ng)
	if err != nil {
		s.mu.Unlock()
		return 0, err
	}
	ticket, err := s.commitLocked([]change{{gid: gid, prev: old, next: ng}}, journal.Op{Kind: journal.OpSet, Key: gid, Value: value})
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return s.wait(ctx, ticket)
}

// renderAtPush reports whether a push at now to the group old (nil: a new
// group), begun when textScrapes text scrapes had started
// (render.State.TextScrapes), renders its families' text bodies
// (render.Cache.Fill): when pushes render text at all
// (render.State.RenderText) and either the group is new or a text scrape
// started since the group's last push, and so probably read the bodies
// that push rendered. Otherwise the push replaces bodies no scrape
// read, and its own would likely go unread too: the next text scrape
// renders the last push's bodies once, from their protobuf bytes
// (render.Cache.Text), with the same bytes, instead of every push
// rendering them. Pushes that come faster than scrapes thus render about
// twice per scrape interval, once in the first push and once in the
// scrape.
//
// Measured at 10,000 groups of the bench payload, 10 s of keep-alive PUTs
// by 8 clients after a text scrape, 3 alternating runs against the build
// that rendered every push: 260-283 us of CPU per push against 302-329 us
// (the null server: 56.7 us). The first text scrape after those pushes
// took 719-808 ms against 96-179 ms, since it renders them; the ones after
// it are as fast as before. A group pushed exactly twice per scrape
// interval costs more than before (a render from the stored bytes costs
// about twice one at push time), three or more times less. A wave that
// pushes every group once between scrapes renders as before
// (bench/gzipchurn.sh: the first gzip scrape after it 98-133 ms against
// 143 ms).
func (s *Store) renderAtPush(old *Group, now time.Time, textScrapes uint64) bool {
	if !s.render.RenderText(now) {
		return false
	}
	return old == nil || old.textScrapes < textScrapes
}

// dropTimeFamilies removes pushed push_time_seconds and
// push_failure_time_seconds families: as in the reference, the gateway's own
// values replace them and the push goes on. Each is counted
// (OverriddenFamilies) and logged at debug.
func (s *Store) dropTimeFamilies(key groupkey.Key, families []*dto.MetricFamily) []*dto.MetricFamily {
	for i := 0; i < len(families); i++ {
		name := families[i].GetName()
		if name != PushTimeName && name != PushFailureTimeName {
			continue
		}
		s.overridden.Add(1)
		s.logger.Debug("pushed family replaced by the gateway's own", "group", key, "family", name)
		families = append(families[:i:i], families[i+1:]...)
		i--
	}
	return families
}

// OverriddenFamilies returns how many pushed push_time_seconds and
// push_failure_time_seconds families the gateway's own values replaced.
func (s *Store) OverriddenFamilies() uint64 { return s.overridden.Load() }

// recordFailure sets the group's push_failure_time_seconds for a push
// refused for reason. An absent group is created with
// push_time_seconds 0, as the reference does — unless creating it would
// itself collide with another group's series: a rejected push never makes the
// store inconsistent.
func (s *Store) recordFailure(ctx context.Context, key groupkey.Key, at time.Time, reason string) {
	gid := key.ID()
	// The group the failure creates if there is none, rendered before the
	// lock is taken; an existing group takes only its failure family.
	fresh := &Group{key: key, failTime: at, failReason: reason, families: make(familySet, 0, 2)}
	prepared := s.addTimeFamilies(fresh, nil, nil, s.render.encoding(), nil)

	s.mu.Lock()
	old := s.headGroup(gid)
	ng := fresh
	if old != nil {
		ng = old.clone()
		ng.failTime, ng.failReason = at, reason
		ng.families.put(fresh.families.get(PushFailureTimeName))
	} else {
		err := admission.Capacity(s.opts.Limits, s.headGroups, s.series, 1, seriesDelta(nil, ng))
		if err == nil {
			err = s.index.check(gid, nil, ng.families, prepared, s.ownerName)
		}
		if err != nil {
			s.mu.Unlock()
			// Debug: a client can cause this at will, so it must not flood the log.
			s.logger.Debug("failure time not recorded: the group cannot be created", "group", key, "reason", err)
			return
		}
	}
	value, err := s.journalValue(ng)
	var ticket journal.Commit
	if err == nil {
		ticket, err = s.commitLocked([]change{{gid: gid, prev: old, next: ng}}, journal.Op{Kind: journal.OpSet, Key: gid, Value: value})
	}
	s.mu.Unlock()
	if err == nil {
		_, err = s.wait(ctx, ticket)
	}
	if err != nil {
		s.logger.Error("failure time not recorded", "group", key, "err", err)
	}
}

// Delete removes the group with the given key and returns the position of
// the commit that did. Deleting an absent group is not an error, and is
// committed all the same (a delete of nothing): its answer then waits for
// every change appended before it, a pending change of this group
// included, and a cluster writer that was deposed cannot answer it from a
// stale store.
func (s *Store) Delete(ctx context.Context, key groupkey.Key) (journal.Position, error) {
	gid := key.ID()
	s.mu.Lock()
	old := s.headGroup(gid)
	ticket, err := s.commitLocked([]change{{gid: gid, prev: old}}, journal.Op{Kind: journal.OpDelete, Key: gid})
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return s.wait(ctx, ticket)
}

// Wipe removes every group at once (no push is applied between the first
// and the last removal) and returns the position of its commit.
func (s *Store) Wipe(ctx context.Context) (journal.Position, error) {
	s.mu.Lock()
	var changes []change
	s.eachHeadGroup(func(gid string, g *Group) {
		changes = append(changes, change{gid: gid, prev: g})
	})
	ticket, err := s.commitLocked(changes, journal.Op{Kind: journal.OpDeleteAll})
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return s.wait(ctx, ticket)
}

// DeleteWhere removes, in one atomic change, every group of the head for
// which match returns true, and returns their keys sorted and the position
// of the last commit it waited for. With dryRun it only returns the keys.
// match runs under the store's lock and must be quick. When nothing
// matches, it waits for the changes pending when it looked. With
// Options.MaxBatchOps, more groups than that are removed in several atomic
// changes, appended at once: no push lands between them in the log, but a
// failed one leaves the groups of the batches before it deleted.
func (s *Store) DeleteWhere(ctx context.Context, match func(*Group) bool, dryRun bool) ([]groupkey.Key, journal.Position, error) {
	s.mu.Lock()
	var (
		keys    []groupkey.Key
		changes []change
		ops     []journal.Op
	)
	s.eachHeadGroup(func(gid string, g *Group) {
		if !match(g) {
			return
		}
		keys = append(keys, g.key)
		changes = append(changes, change{gid: gid, prev: g})
		ops = append(ops, journal.Op{Kind: journal.OpDelete, Key: gid})
	})
	sort.Slice(keys, func(i, j int) bool { return keys[i].ID() < keys[j].ID() })
	if dryRun {
		s.mu.Unlock()
		return keys, 0, nil
	}
	if len(keys) == 0 {
		// Nothing to delete: the answer waits for the changes pending
		// when it looked, or stands at the position the store holds.
		last, applied := s.lastPending(), s.applied
		s.mu.Unlock()
		if last == nil {
			return keys, applied, nil
		}
		pos, err := s.wait(ctx, last)
		return keys, pos, err
	}
	size := len(ops)
	if s.opts.MaxBatchOps > 0 {
		size = s.opts.MaxBatchOps
	}
	var tickets []journal.Commit
	for start := 0; start < len(ops); start += size {
		end := min(start+size, len(ops))
		ticket, err := s.commitLocked(changes[start:end], ops[start:end]...)
		if err != nil {
			s.mu.Unlock()
			// The batches appended before this one fail with it or are
			// published by their own waits.
			for _, t := range tickets {
				_, _ = s.wait(ctx, t)
			}
			return nil, 0, err
		}
		tickets = append(tickets, ticket)
	}
	s.mu.Unlock()
	var (
		firstErr error
		pos      journal.Position
	)
	for _, t := range tickets {
		p, err := s.wait(ctx, t)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		pos = max(pos, p)
	}
	return keys, pos, firstErr
}

// seriesDelta returns how many series replacing group old by next (either
// may be nil) adds to the store. Families shared by both are skipped, so the
// cost is that of the families of the two groups, as in install; their
// counterparts are found by walking both sorted sets side by side
// (counterparts), where a lookup in the other set took 2.7% of a push's
// CPU at 10,000 groups.
func seriesDelta(old, next *Group) int {
	var of, nf familySet
	if old != nil {
		of = old.families
	}
	if next != nil {
		nf = next.families
	}
	var buf [16]*Family
	d := 0
	for i, other := range counterparts(of, nf, buf[:]) {
		if other != of[i] {
			d -= len(of[i].series())
		}
	}
	for i, other := range counterparts(nf, of, buf[:]) {
		if other != nf[i] {
			d += len(nf[i].series())
		}
	}
	return d
}
