// Package store holds the pushed metric groups: groups and their families,
// the consistency index that checks a push against the whole store in time
// proportional to the push, and the ordered view that scrapes stream from.
package store

import (
	"fmt"
	"hash/maphash"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/google/btree"
	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/limits"
)

// Options configures a Store.
type Options struct {
	// UTF8Names allows UTF-8 metric and label names.
	UTF8Names bool
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
	// Limits bounds pushes and the store's size; the zero value has none.
	Limits limits.Limits
	// MaxBatchOps, when positive, is the most ops the log takes in one
	// batch (the etcd backend: 127): a bulk delete of more groups is split
	// into batches of at most this many, each atomic on its own.
	MaxBatchOps int
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
	// scraped), the count of families scrapes left out, and the buffers
	// pushes render into.
	render renderState
	// templates holds the text templates pushes share (PushText).
	templates templates

	mu sync.Mutex
	// groups and entries are the served state: committed groups, and their
	// families in scrape order (see commit.go).
	groups  map[string]*Group
	entries *btree.BTreeG[Entry]
	// index, overlay, headGroups and series describe the head: committed
	// state plus the pending changes. overlay holds the head state of the
	// groups pending changes touch (nil: removed).
	index      *index
	overlay    map[string]*headState
	headGroups int
	// pending holds the batches appended to the journal and not yet known
	// durable, oldest first.
	pending []pendingBatch
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
	// series is the number of series of all groups of the head, kept by
	// reindex so that the store limits are checked in O(push).
	series int
	// overridden counts pushed timestamp families (dropTimeFamilies).
	overridden atomic.Uint64
	// published counts the changes of the served state (publish), so
	// that a background reader can tell it has seen all of it (Published).
	published atomic.Uint64
	// applied is the highest log position Apply applied, and
	// applyConflicts counts the changes it applied against the index.
	applied        journal.Position
	applyConflicts uint64
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
		overlay: make(map[string]*headState),
		index:   newIndex(opts.UTF8Names),
		entries: btree.NewG[Entry](32, entryLess),
	}
	s.render.SetLogger(logger)
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

// ownerName names group gid of the head for error messages. s.mu must be
// held.
func (s *Store) ownerName(gid string) string {
	if g := s.headGroup(gid); g != nil {
		return g.key.String()
	}
	return fmt.Sprintf("%q", gid)
}

// Groups returns every committed group, sorted by grouping key.
func (s *Store) Groups() []*Group {
	s.mu.Lock()
	out := make([]*Group, 0, len(s.groups))
	for _, g := range s.groups {
		out = append(out, g)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].key.ID() < out[j].key.ID() })
	return out
}

// Group returns the committed group with the given key, or nil.
func (s *Store) Group(key groupkey.Key) *Group {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.groups[key.ID()]
}

// Stats is a summary of the store's size.
type Stats struct {
	Groups, Families, Series int
}

// Stats counts committed groups and families, and the series of the head
// (committed and pending), in O(1), from running totals.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Groups: len(s.groups), Families: s.entries.Len(), Series: s.series}
}

// Published returns how many times the store's served state has changed
// (a group added, replaced or removed): equal counts mean that a snapshot
// taken at the second shows nothing a snapshot taken at the first did not.
func (s *Store) Published() uint64 { return s.published.Load() }

// SkippedFamilies returns how many times a scrape left a stored family (or
// one of the gateway's own) out because it could not be rendered in the
// scrape's format, so that the scrape stayed whole and valid. Pushes refuse
// such families, so it stays 0 unless something slipped through.
func (s *Store) SkippedFamilies() uint64 { return s.render.Skipped() }

// Limits returns the limits the store enforces.
func (s *Store) Limits() limits.Limits { return s.opts.Limits }
