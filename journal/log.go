package journal

import (
	"context"
	"errors"
)

// ErrCompacted is returned (wrapped) by Follow when the log no longer holds
// the changes after the position asked for.
var ErrCompacted = errors.New("log compacted past the requested position")

// Errors a Log's Append or Commit.Wait wrap, so that the store's callers
// can tell what happened without knowing the backend.
var (
	// ErrTooLarge: one change is larger than the log can commit at once
	// (the etcd backend's request limit). Nothing was written; the error
	// names the limit.
	ErrTooLarge = errors.New("change too large for the log")
	// ErrAmbiguous: the batch may or may not have been committed (a
	// timeout or a lost connection). The writer must rebuild its state
	// from what the log holds before it takes writes again.
	ErrAmbiguous = errors.New("commit outcome unknown")
	// ErrNotLeader: this process may not write to the log now (another
	// replica leads, or this one was deposed). Nothing was written.
	ErrNotLeader = errors.New("not the log's writer")
)

// Position orders the changes of a log: the file journal's append
// sequence, the etcd backend's revision. Positions only grow; 0 is before
// the first change.
type Position uint64

// Commit is one batch of ops appended to a Log, on its way to being
// durable.
type Commit interface {
	// Wait blocks until the batch is durable (written and synced, or
	// committed by the cluster) or failed. Cancelling ctx only stops the
	// wait; the batch may still become durable.
	Wait(ctx context.Context) error
	// Position is the batch's position in the log, valid once Wait has
	// returned nil.
	Position() Position
}

// Log is the durable change log a store writes to. Batches become durable
// in the order they were appended: when one fails, none appended after it
// succeeds.
type Log interface {
	// Append enqueues ops as one atomic batch. It is called under the
	// store's lock, so it must not wait for I/O.
	Append(ops ...Op) (Commit, error)
}

// Snapshotter is a log that can hand over its whole state: Load calls fn
// for every live key at one position, in key order, and returns that
// position, from which a Follower continues.
type Snapshotter interface {
	Load(ctx context.Context, fn func(key string, value []byte) error) (Position, error)
}

// Batch is one committed batch of changes, as a Follower delivers it.
type Batch struct {
	Position Position
	Ops      []Op
	// Own is set when this process's Log committed the batch: its store
	// installed the change when it was pushed, and only needs to know the
	// position it now holds.
	Own bool
}

// Follower is a log whose changes can be followed: Follow calls fn for
// every batch committed after from, in order, until ctx ends or fn or the
// log fails. A log that lost the history after from (compacted) returns an
// error wrapping ErrCompacted; the follower then loads a fresh snapshot.
// A batch's op values are only valid until fn returns: the log may reuse
// their memory for the next batch.
type Follower interface {
	Follow(ctx context.Context, from Position, fn func(Batch) error) error
}
