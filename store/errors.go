package store

import (
	"errors"
	"fmt"

	"github.com/pushgate/pushgate/journal"
)

// PersistenceError reports a change the log did not make durable, or whose
// commit is in doubt (journal.ErrAmbiguous). Nothing of it was published:
// it was taken back out of the pending state, with every change appended
// after it. What follows is the log's matter: the file journal refuses
// every later change until a restart, and a cluster leader rebuilds its
// store from etcd before it takes writes again.
type PersistenceError struct {
	Err error
}

// Error describes the storage failure.
func (e *PersistenceError) Error() string { return fmt.Sprintf("persistence failed: %v", e.Err) }

// Unwrap returns the journal's error.
func (e *PersistenceError) Unwrap() error { return e.Err }

// TooLarge reports whether the log refused the change for its size
// (journal.ErrTooLarge): retrying cannot help, unlike other persistence
// failures.
func (e *PersistenceError) TooLarge() bool { return errors.Is(e.Err, journal.ErrTooLarge) }
