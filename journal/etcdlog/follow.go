package etcdlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/klauspost/compress/s2"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pushgate/pushgate/groupcodec"
	"github.com/pushgate/pushgate/journal"
)

// loadPageKeys is how many groups one request of Load reads: about 2 MB
// of the bench payload's compressed groups, few enough requests for 100,000
// groups and small enough responses to keep memory flat.
const loadPageKeys = 1000

// Load calls fn for every group at one revision, in key order, with the
// group id and its value as the store encoded it, and returns that
// revision: the position Follow continues from. It reads in pages, each at
// the first page's revision, the next one while fn takes the current one;
// if etcd compacts that revision meanwhile, Load fails with an error
// wrapping journal.ErrCompacted, and the caller starts over with a fresh
// store.
func (l *Log) Load(ctx context.Context, fn func(key string, value []byte) error) (journal.Position, error) {
	ctx, cancel := context.WithCancel(ctx)
	pages := make(chan loadPage, 1)
	go l.readPages(ctx, pages)
	defer func() {
		cancel()
		for range pages {
		}
	}()
	var rev int64
	for p := range pages {
		if p.err != nil {
			return 0, p.err
		}
		rev = p.rev
		for _, kv := range p.kvs {
			gid := string(kv.Key[len(l.keys.groups):])
			value, err := unstored(kv.Value)
			if err != nil {
				return 0, fmt.Errorf("load group %q: %w", gid, err)
			}
			if err := fn(gid, value); err != nil {
				return 0, fmt.Errorf("load group %q: %w", gid, err)
			}
		}
	}
	l.noteDelivered(journal.Position(rev))
	return journal.Position(rev), nil
}

// loadPage is one page of Load's groups, at revision rev, or the error
// that ended the reading.
type loadPage struct {
	rev int64
	kvs []*mvccpb.KeyValue
	err error
}

// readPages sends the pages of the groups to pages, the first one even if
// empty (it carries the revision), and closes it after the last one, or
// after a page holding an error, or once ctx ends.
func (l *Log) readPages(ctx context.Context, pages chan<- loadPage) {
	defer close(pages)
	from, end := l.keys.groups, clientv3.GetPrefixRangeEnd(l.keys.groups)
	var rev int64
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(loadPageKeys)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		rctx, cancel := context.WithTimeout(ctx, l.cfg.RequestTimeout)
		resp, err := l.client.Get(rctx, from, opts...)
		cancel()
		var p loadPage
		if err != nil {
			if errors.Is(err, rpctypes.ErrCompacted) {
				err = fmt.Errorf("%w: %w", journal.ErrCompacted, err)
			}
			p.err = fmt.Errorf("load %s at revision %d: %w", l.keys.groups, rev, err)
		} else {
			if rev == 0 {
				rev = resp.Header.Revision
			}
			p.rev, p.kvs = rev, resp.Kvs
		}
		select {
		case pages <- p:
		case <-ctx.Done():
			return
		}
		if p.err != nil || !resp.More || len(resp.Kvs) == 0 {
			return
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// Current returns the position of the last commit (head's mod revision),
// read through etcd's quorum: a store whose Applied position has reached
// it holds every commit acknowledged before Current was called.
func (l *Log) Current(ctx context.Context) (journal.Position, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.RequestTimeout)
	defer cancel()
	resp, err := l.client.Get(ctx, l.keys.head)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", l.keys.head, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	return journal.Position(resp.Kvs[0].ModRevision), nil
}

// Follow calls fn, in order, for every revision after from that changed
// groups or head, until ctx ends, fn fails or the watch fails. A revision
// is one journal.Batch: a put of a group is an OpSet with the store's
// encoding, a delete an OpDelete (a wipe deletes each group). A batch that
// head names as this Log's is Own and carries no ops: the store that pushed
// them holds them already, and only needs the position. A batch carrying
// only head (a term's barrier) has no ops either. The watch requires etcd's leader (a member
// cut off from its quorum ends it) and asks for progress notifications
// (Stats.WatchRevision). If etcd compacted the revisions after from, Follow
// returns an error wrapping journal.ErrCompacted: load a fresh store.
//
// Run one Follow at a time per Log: a Campaign waits for the barrier it
// delivers.
func (l *Log) Follow(ctx context.Context, from journal.Position, fn func(journal.Batch) error) error {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	// The watched range holds groups/... and head, which sorts right after
	// it; the election and meta keys sort later and stay out.
	end := l.keys.head + "\x00"
	wch := l.client.Watch(ctx, l.keys.groups,
		clientv3.WithRange(end), clientv3.WithRev(int64(from)+1), clientv3.WithProgressNotify())
	var values []byte // the decompressed values of the batch being delivered
	for resp := range wch {
		if err := resp.Err(); err != nil {
			if resp.CompactRevision != 0 || errors.Is(err, rpctypes.ErrCompacted) {
				return fmt.Errorf("follow from position %d: %w: etcd compacted up to revision %d",
					from, journal.ErrCompacted, resp.CompactRevision)
			}
			return fmt.Errorf("follow from position %d: %w", from, err)
		}
		if err := l.deliver(resp.Events, &values, fn); err != nil {
			return err
		}
		l.mu.Lock()
		if r := journal.Position(resp.Header.Revision); r > l.stats.WatchRevision {
			l.stats.WatchRevision = r
		}
		l.mu.Unlock()
		if n := len(resp.Events); n > 0 {
			from = journal.Position(resp.Events[n-1].Kv.ModRevision)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("follow from position %d: the watch closed", from)
}

// deliver hands the events of one watch response to fn, one Batch per
// revision. etcd never splits a revision's events across responses (its
// watch batches whole revisions), so a response ends a batch. The values
// of an Own batch are not decompressed: its store holds them already. The
// others are decompressed into *values, which every batch reuses (a
// follower applies each replicated push: a fresh buffer per value was a
// third of what applying one allocated); fn must not keep them.
func (l *Log) deliver(events []*clientv3.Event, values *[]byte, fn func(journal.Batch) error) error {
	for i := 0; i < len(events); {
		rev := events[i].Kv.ModRevision
		j := i + 1
		for j < len(events) && events[j].Kv.ModRevision == rev {
			j++
		}
		b := journal.Batch{Position: journal.Position(rev)}
		ours := false // the revision touched the log's keys
		for _, ev := range events[i:j] {
			key := string(ev.Kv.Key)
			switch {
			case key == l.keys.head:
				ours = true
				if ev.Type == mvccpb.PUT {
					b.Own = l.isOwn(ev.Kv.Value)
				}
			case strings.HasPrefix(key, l.keys.groups):
				ours = true
			}
		}
		if !b.Own {
			if err := decodedSize(events[i:j], l.keys.groups, values); err != nil {
				return fmt.Errorf("follow: position %d: %w", rev, err)
			}
			free := *values
			for _, ev := range events[i:j] {
				key := string(ev.Kv.Key)
				if !strings.HasPrefix(key, l.keys.groups) {
					continue
				}
				gid := key[len(l.keys.groups):]
				if ev.Type == mvccpb.DELETE {
					b.Ops = append(b.Ops, journal.Op{Kind: journal.OpDelete, Key: gid})
					continue
				}
				value := ev.Kv.Value
				if !groupcodec.Compressed(value) {
					n, _ := s2.DecodedLen(value) // checked by decodedSize
					var err error
					if value, err = s2.Decode(free[:n:n], value); err != nil {
						return fmt.Errorf("follow: group %q at position %d: decompress: %w", gid, rev, err)
					}
					free = free[n:]
				}
				b.Ops = append(b.Ops, journal.Op{Kind: journal.OpSet, Key: gid, Value: value})
			}
		}
		i = j
		if !ours {
			continue
		}
		if err := fn(b); err != nil {
			return fmt.Errorf("follow: batch at position %d: %w", b.Position, err)
		}
		l.noteDelivered(b.Position)
	}
	return nil
}

// decodedSize makes *values hold at least the decompressed bytes of every
// s2-compressed group put among events (one revision's), growing it if need
// be.
func decodedSize(events []*clientv3.Event, groups string, values *[]byte) error {
	total := 0
	for _, ev := range events {
		if ev.Type != mvccpb.PUT || len(ev.Kv.Key) < len(groups) || string(ev.Kv.Key[:len(groups)]) != groups ||
			groupcodec.Compressed(ev.Kv.Value) {
			continue
		}
		n, err := s2.DecodedLen(ev.Kv.Value)
		if err != nil {
			return fmt.Errorf("group %q: decompress: %w", ev.Kv.Key[len(groups):], err)
		}
		total += n
	}
	if cap(*values) < total {
		*values = make([]byte, total)
	}
	*values = (*values)[:cap(*values)]
	return nil
}

// isOwn reports whether head's value names a batch this Log committed and
// knows the outcome of.
func (l *Log) isOwn(head []byte) bool {
	lease, seq, ok := parseHead(string(head))
	if !ok {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, mine := l.leases[lease]; !mine {
		return false
	}
	_, doubt := l.ambiguous[seq]
	return !doubt
}

// parseHead splits head's value "<lease id hex>/<batch seq>".
func parseHead(v string) (clientv3.LeaseID, uint64, bool) {
	l, s, ok := strings.Cut(v, "/")
	if !ok {
		return 0, 0, false
	}
	lease, err := strconv.ParseInt(l, 16, 64)
	if err != nil {
		return 0, 0, false
	}
	seq, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return clientv3.LeaseID(lease), seq, true
}
