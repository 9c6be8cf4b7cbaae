package admission

import (
	"errors"
	"fmt"
)

// Class says what a refusal means for the store and for the answer.
type Class int

const (
	// Refused is a push that is wrong in itself or conflicts with stored
	// groups: 400, and the group's push_failure_time_seconds records it.
	Refused Class = iota
	// OverLimit is a push larger than a per-push limit allows: 400, and
	// nothing is recorded, as for a body over the size limit.
	OverLimit
	// StoreFull is a push the store has no room for: 507, and nothing is
	// recorded (a full store must not grow).
	StoreFull
)

// Reasons an Error carries; they are the reason label of
// pushgate_rejected_requests_total.
const (
	ReasonInconsistent      = "inconsistent"
	ReasonTooManySeries     = "too_many_series"
	ReasonTooManyLabels     = "too_many_labels"
	ReasonLabelNameTooLong  = "label_name_too_long"
	ReasonLabelValueTooLong = "label_value_too_long"
	ReasonStoreFullGroups   = "store_full_groups"
	ReasonStoreFullSeries   = "store_full_series"
)

// refusedPrefix opens the message of a Refused push, worded like the
// reference Pushgateway's.
const refusedPrefix = "pushed metrics are invalid or inconsistent with existing metrics: "

// Error is a refused push: what it means (Class), the reason it is counted
// under (one of the Reason constants) and what was wrong, in one line that
// names the metric or label at fault.
type Error struct {
	Class  Class
	Reason string
	// Msg says what was wrong. For a Refused push it is also the failure
	// reason the group keeps (Group.FailureReason).
	Msg string
}

// Error returns the one-line reason the client is answered with.
func (e *Error) Error() string {
	if e.Class == Refused {
		return refusedPrefix + e.Msg
	}
	return e.Msg
}

// Refusal returns the refusal of a push whose check failed with err:
// err itself when it is an *Error already, otherwise a Refused *Error
// holding err's message.
func Refusal(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Class: Refused, Reason: ReasonInconsistent, Msg: err.Error()}
}

// overLimit returns an OverLimit refusal.
func overLimit(reason, format string, args ...any) *Error {
	return &Error{Class: OverLimit, Reason: reason, Msg: fmt.Sprintf(format, args...)}
}
