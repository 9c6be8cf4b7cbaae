package etcdlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/pushgate/pushgate/journal"
)

// Limits of one commit transaction. etcd's defaults are 128 operations
// (--max-txn-ops) and 1.5 MiB (--max-request-bytes) per request: head's put
// takes one operation, and the byte budget leaves room for the compares,
// head and the protobuf framing.
const (
	maxGroupOps = 127
	maxTxnBytes = 14 << 20 / 10 // ~1.4 MiB
	// opOverhead bounds the framing of one operation in a request (the
	// RequestOp, PutRequest and field headers: about 12 bytes).
	opOverhead = 32
	// txnOverhead bounds the rest of a commit request: the two compares,
	// the put of head and the framing.
	txnOverhead = 1024
)

// entry is one Append: its ops, coalesced, on their way into a
// transaction. It is the journal.Commit Append returns.
type entry struct {
	term      *term
	deleteAll bool   // the Append removes every group (and holds nothing else)
	slots     []slot // the Append's ops, one per key, the last op on a key winning
	bytes     int    // request bytes of slots, once compressed
	packed    bool   // values compressed and bytes counted

	done chan struct{}
	err  error            // set before done is closed
	pos  journal.Position // set before done is closed
}

// slot is the last op on one key of a batch.
type slot struct {
	key string // the group id (without the key prefix)
	set bool   // a put of val, or else a delete
	val []byte // the store's encoding, then (once packed) as stored (see stored)
	raw int    // len(val) before compression
}

// Wait blocks until the Append's transaction committed or failed, or ctx
// ends.
func (e *entry) Wait(ctx context.Context) error {
	select {
	case <-e.done:
		return e.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Position returns the etcd revision of the Append's transaction, once
// Wait has returned nil.
func (e *entry) Position() journal.Position { return e.pos }

// finish completes e.
func (e *entry) finish(pos journal.Position, err error) {
	e.pos, e.err = pos, err
	close(e.done)
}

// newEntry checks ops and returns them as an entry. An Append too large for
// one transaction fails with ErrTooLarge. Compression is left to the
// committer, so that Append, called under the store's lock, stays short,
// except for a value too large to be known to fit otherwise.
func newEntry(ops []journal.Op, keyPrefixLen int) (*entry, error) {
	if len(ops) == 0 {
		return nil, errors.New("append: an empty batch")
	}
	e := &entry{done: make(chan struct{})}
	if len(ops) == 1 && ops[0].Kind == journal.OpDeleteAll {
		e.deleteAll = true
		e.bytes = opOverhead + keyPrefixLen
		e.packed = true
		return e, nil
	}
	index := map[string]int(nil)
	if len(ops) > 1 {
		index = make(map[string]int, len(ops))
	}
	bound := 0 // request bytes if nothing compresses
	for _, op := range ops {
		var s slot
		switch op.Kind {
		case journal.OpSet:
			s = slot{key: op.Key, set: true, val: op.Value, raw: len(op.Value)}
		case journal.OpDelete:
			s = slot{key: op.Key}
		case journal.OpDeleteAll:
			return nil, errors.New("append: a delete-all must be the only op of its batch")
		default:
			return nil, fmt.Errorf("append: unknown op %v", op.Kind)
		}
		if i, ok := index[op.Key]; ok {
			bound -= slotBound(e.slots[i], keyPrefixLen)
			e.slots[i] = s
		} else {
			if index != nil {
				index[op.Key] = len(e.slots)
			}
			e.slots = append(e.slots, s)
		}
		bound += slotBound(s, keyPrefixLen)
	}
	if len(e.slots) > maxGroupOps {
		return nil, fmt.Errorf("%w: %d groups in one batch, over the %d an etcd transaction may hold", ErrTooLarge, len(e.slots), maxGroupOps)
	}
	if bound > maxTxnBytes-txnOverhead {
		e.pack(keyPrefixLen)
		if e.bytes > maxTxnBytes-txnOverhead {
			what := fmt.Sprintf("%d groups", len(e.slots))
			if len(e.slots) == 1 {
				what = fmt.Sprintf("group %q", e.slots[0].key)
			}
			return nil, fmt.Errorf("%w: %s of %d bytes (%d compressed), over the %d bytes an etcd transaction may carry",
				ErrTooLarge, what, rawBytes(e.slots), e.bytes, maxTxnBytes-txnOverhead)
		}
	}
	return e, nil
}

// slotBound is the most request bytes s can take once compressed.
func slotBound(s slot, keyPrefixLen int) int {
	n := opOverhead + keyPrefixLen + len(s.key)
	if s.set {
		n += storedBound(s.val)
	}
	return n
}

func rawBytes(slots []slot) int {
	n := 0
	for _, s := range slots {
		n += s.raw
	}
	return n
}

// pack turns e's values into what etcd stores (stored) and counts its
// request bytes.
func (e *entry) pack(keyPrefixLen int) {
	if e.packed {
		return
	}
	e.bytes = 0
	for i := range e.slots {
		s := &e.slots[i]
		if s.set {
			s.val = stored(s.val)
		}
		e.bytes += opOverhead + keyPrefixLen + len(s.key) + len(s.val)
	}
	e.packed = true
}

// batch is the content of one commit transaction: the entries it commits
// and their ops, coalesced by key.
type batch struct {
	entries   []*entry
	deleteAll bool
	slots     []slot
	sizes     []int          // request bytes of each slot
	index     map[string]int // key -> slots index
	bytes     int
}

// add puts packed entry e into b, unless that would exceed a transaction's
// limits; an empty batch takes any entry (newEntry bounded it). A
// delete-all replaces everything before it, and nothing can follow it in
// the same transaction (etcd refuses a put inside a range the transaction
// deletes).
func (b *batch) add(e *entry, keyPrefixLen int) bool {
	if b.deleteAll {
		return false
	}
	if e.deleteAll {
		b.slots, b.sizes = b.slots[:0], b.sizes[:0]
		clear(b.index)
		b.deleteAll = true
		b.bytes = e.bytes
		b.entries = append(b.entries, e)
		return true
	}
	if b.index == nil {
		b.index = make(map[string]int)
	}
	newKeys, bytes := 0, b.bytes
	for _, s := range e.slots {
		size := opOverhead + keyPrefixLen + len(s.key) + len(s.val)
		if i, ok := b.index[s.key]; ok {
			bytes += size - b.sizes[i]
		} else {
			newKeys++
			bytes += size
		}
	}
	if len(b.entries) > 0 && (len(b.slots)+newKeys > maxGroupOps || bytes > maxTxnBytes-txnOverhead) {
		return false
	}
	for _, s := range e.slots {
		size := opOverhead + keyPrefixLen + len(s.key) + len(s.val)
		if i, ok := b.index[s.key]; ok {
			b.slots[i], b.sizes[i] = s, size
			continue
		}
		b.index[s.key] = len(b.slots)
		b.slots = append(b.slots, s)
		b.sizes = append(b.sizes, size)
	}
	b.bytes = bytes
	b.entries = append(b.entries, e)
	return true
}
