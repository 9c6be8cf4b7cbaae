package store

import (
	"testing"

	"github.com/pushgate/pushgate/journal"
)

// testRecord returns g's journal record, failing tb when it cannot be
// encoded.
func testRecord(tb testing.TB, g *Group) []byte {
	tb.Helper()
	b, err := encodeGroup(g)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// testJournalOps returns s.JournalOps, failing tb on an error.
func testJournalOps(tb testing.TB, s *Store) []journal.Op {
	tb.Helper()
	ops, err := s.JournalOps()
	if err != nil {
		tb.Fatal(err)
	}
	return ops
}
