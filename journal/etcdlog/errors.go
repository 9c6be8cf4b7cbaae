package etcdlog

import (
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"

	"github.com/pushgate/pushgate/journal"
)

// Errors returned (wrapped) by the Log. An error ending a term is wrapped
// together with ErrNotLeader in the errors of every later Append, so both
// errors.Is(err, ErrNotLeader) and errors.Is(err, ErrNoSpace) (say) hold.
// ErrNotLeader, ErrAmbiguous and ErrTooLarge are also package journal's
// errors of the same names, which the store's callers test without
// knowing the backend.
var (
	// ErrNotLeader: this replica is not leading (never campaigned, deposed,
	// or its term ended); writes go to the leader.
	ErrNotLeader error = &kindError{"not the leader of the cluster", journal.ErrNotLeader}
	// ErrAmbiguous: a commit timed out or lost its connection, so it may or
	// may not have been applied. The term ends; the replica rebuilds its
	// store from what etcd holds.
	ErrAmbiguous error = &kindError{"commit outcome unknown", journal.ErrAmbiguous}
	// ErrTooLarge: a batch exceeds what one etcd transaction may carry. Its
	// message names the limit.
	ErrTooLarge error = &kindError{"too large for one etcd transaction", journal.ErrTooLarge}
	// ErrNoSpace: etcd refuses writes because its database reached its quota
	// (the NOSPACE alarm). An operator must compact, defragment and disarm.
	ErrNoSpace = errors.New("etcd is out of space (NOSPACE alarm)")
	// ErrSessionLost: the election session's lease keepalives went
	// unanswered for the lease TTL, so the lease, and with it leadership,
	// may be gone.
	ErrSessionLost = errors.New("etcd session lost")
	// ErrResigned ends a term given up by Resign.
	ErrResigned = errors.New("resigned the leadership")
	// ErrClosed: the Log was closed.
	ErrClosed = errors.New("etcd log closed")
	// ErrMetaMismatch: this replica's settings differ from the ones the
	// cluster was started with (the meta key).
	ErrMetaMismatch = errors.New("settings differ from the cluster's")
)

// kindError is an error of this package that is also one of package
// journal's (kind), with a message of its own.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }

// Unwrap returns the journal error e is a case of.
func (e *kindError) Unwrap() error { return e.kind }

// commitError classifies the error of a commit transaction. A refusal
// etcd decided before or instead of applying the transaction (out of space,
// too large, permission) is definite: nothing was written. Anything else (a
// timeout, a lost connection, a leader change inside etcd) may have been
// applied, and is reported as ErrAmbiguous.
func commitError(err error) (wrapped error, ambiguous bool) {
	switch {
	case errors.Is(err, rpctypes.ErrNoSpace):
		return noSpace(err), false
	case errors.Is(err, rpctypes.ErrRequestTooLarge), errors.Is(err, rpctypes.ErrTooManyOps):
		return fmt.Errorf("%w: %w", ErrTooLarge, err), false
	}
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		switch ee.Code() {
		case codes.InvalidArgument, codes.FailedPrecondition, codes.PermissionDenied,
			codes.Unauthenticated, codes.ResourceExhausted, codes.OutOfRange, codes.NotFound:
			return fmt.Errorf("etcd refused the commit: %w", err), false
		}
	}
	return fmt.Errorf("%w: %w", ErrAmbiguous, err), true
}

// noSpace wraps etcd's NOSPACE refusal in ErrNoSpace.
func noSpace(err error) error {
	if errors.Is(err, rpctypes.ErrNoSpace) {
		return fmt.Errorf("%w: %w", ErrNoSpace, err)
	}
	return err
}
