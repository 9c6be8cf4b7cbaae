package journal

import "fmt"

// OpKind says what an Op does.
type OpKind uint8

const (
	// OpSet stores Value under Key.
	OpSet OpKind = iota + 1
	// OpDelete removes Key.
	OpDelete
	// OpDeleteAll removes every key (a wipe).
	OpDeleteAll
)

// String returns the kind's name.
func (k OpKind) String() string {
	switch k {
	case OpSet:
		return "set"
	case OpDelete:
		return "delete"
	case OpDeleteAll:
		return "delete-all"
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}

// Op is one change: Set key=value, Delete key, or DeleteAll (wipe).
type Op struct {
	Kind  OpKind
	Key   string
	Value []byte
}
