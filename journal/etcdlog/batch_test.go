package etcdlog

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pushgate/pushgate/journal"
)

const testPrefixLen = len("/pushgate/groups/")

func set(key string, value []byte) journal.Op {
	return journal.Op{Kind: journal.OpSet, Key: key, Value: value}
}

func del(key string) journal.Op { return journal.Op{Kind: journal.OpDelete, Key: key} }

// incompressible returns n random bytes.
func incompressible(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(1, uint64(n)))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func mustEntry(t *testing.T, ops ...journal.Op) *entry {
	t.Helper()
	e, err := newEntry(ops, testPrefixLen)
	if err != nil {
		t.Fatal(err)
	}
	e.pack(testPrefixLen)
	return e
}

// slotsOf describes a batch's ops as "set a=1 del b" for comparisons.
func slotsOf(b *batch) string {
	var parts []string
	if b.deleteAll {
		parts = append(parts, "delete-all")
	}
	for _, s := range b.slots {
		if s.set {
			parts = append(parts, "set "+s.key)
		} else {
			parts = append(parts, "del "+s.key)
		}
	}
	return strings.Join(parts, " ")
}

func TestBatchCoalescing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		appends [][]journal.Op
		want    string
		taken   int // entries the batch takes
	}{
		{
			name:    "ops on one group from several appends leave the last",
			appends: [][]journal.Op{{set("a", []byte("1"))}, {set("b", []byte("2"))}, {del("a")}, {set("a", []byte("3"))}},
			want:    "set a set b",
			taken:   4,
		},
		{
			name:    "ops on one group within one append leave the last",
			appends: [][]journal.Op{{set("a", []byte("1")), del("b"), set("b", []byte("2")), del("a")}},
			want:    "del a set b",
			taken:   1,
		},
		{
			name:    "a delete-all drops the ops before it",
			appends: [][]journal.Op{{set("a", []byte("1"))}, {del("b")}, {{Kind: journal.OpDeleteAll}}},
			want:    "delete-all",
			taken:   3,
		},
		{
			name:    "nothing follows a delete-all in its transaction",
			appends: [][]journal.Op{{{Kind: journal.OpDeleteAll}}, {set("a", []byte("1"))}},
			want:    "delete-all",
			taken:   1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b batch
			taken := 0
			for _, ops := range tc.appends {
				if !b.add(mustEntry(t, ops...), testPrefixLen) {
					break
				}
				taken++
			}
			if got := slotsOf(&b); got != tc.want || taken != tc.taken {
				t.Errorf("batch holds %q after taking %d appends, want %q after %d", got, taken, tc.want, tc.taken)
			}
		})
	}
	t.Run("the last value of a coalesced group is the one committed", func(t *testing.T) {
		var b batch
		b.add(mustEntry(t, set("a", []byte("old"))), testPrefixLen)
		b.add(mustEntry(t, set("a", bytes.Repeat([]byte("new"), 100))), testPrefixLen)
		if len(b.slots) != 1 || b.slots[0].raw != 300 {
			t.Fatalf("slots %+v", b.slots)
		}
		want := opOverhead + testPrefixLen + 1 + len(b.slots[0].val)
		if b.bytes != want {
			t.Errorf("batch counts %d bytes, want %d (the replaced value's bytes dropped)", b.bytes, want)
		}
	})
}

func TestBatchLimits(t *testing.T) {
	t.Run("a batch closes before its 128th group", func(t *testing.T) {
		var b batch
		n := 0
		for i := range 300 {
			if !b.add(mustEntry(t, set(fmt.Sprint("g", i), []byte("v"))), testPrefixLen) {
				break
			}
			n++
		}
		if n != maxGroupOps || len(b.slots) != maxGroupOps {
			t.Errorf("took %d appends into %d ops, want %d", n, len(b.slots), maxGroupOps)
		}
	})
	t.Run("appends to groups already in the batch do not count against the 127", func(t *testing.T) {
		var b batch
		for i := range maxGroupOps {
			b.add(mustEntry(t, set(fmt.Sprint("g", i), []byte("v"))), testPrefixLen)
		}
		if !b.add(mustEntry(t, set("g0", []byte("w"))), testPrefixLen) {
			t.Error("a full batch refused a push to a group it holds")
		}
	})
	t.Run("a batch closes before 1.4 MiB", func(t *testing.T) {
		var b batch
		value := incompressible(100 << 10)
		n := 0
		for i := range 100 {
			if !b.add(mustEntry(t, set(fmt.Sprint("g", i), value)), testPrefixLen) {
				break
			}
			n++
		}
		// 14 incompressible 100 KiB groups are 1.37 MiB; a 15th would pass 1.4.
		if b.bytes > maxTxnBytes-txnOverhead || n != 14 {
			t.Errorf("took %d groups of 100 KiB, %d bytes; want 14 within %d", n, b.bytes, maxTxnBytes-txnOverhead)
		}
	})
	t.Run("an empty batch takes an append as large as one transaction", func(t *testing.T) {
		var b batch
		if !b.add(mustEntry(t, set("big", incompressible(maxTxnBytes-2*txnOverhead))), testPrefixLen) {
			t.Error("refused")
		}
	})
}

func TestNewEntry(t *testing.T) {
	many := make([]journal.Op, maxGroupOps+1)
	for i := range many {
		many[i] = del(fmt.Sprint("g", i))
	}
	for _, tc := range []struct {
		name    string
		ops     []journal.Op
		wantErr error
		inErr   string
	}{
		{name: "127 groups fit in one append", ops: many[:maxGroupOps]},
		{name: "128 groups fail with ErrTooLarge naming the limit", ops: many, wantErr: ErrTooLarge, inErr: "128 groups in one batch, over the 127"},
		{name: "a group that compresses under the limit fits", ops: []journal.Op{set("big", bytes.Repeat([]byte("x"), 4<<20))}},
		{
			name:    "a group over the limit once compressed fails with ErrTooLarge naming the group and limit",
			ops:     []journal.Op{set("big", incompressible(maxTxnBytes))},
			wantErr: ErrTooLarge,
			inErr:   fmt.Sprintf(`group "big" of %d bytes`, maxTxnBytes),
		},
		{name: "a delete-all with other ops is refused", ops: []journal.Op{{Kind: journal.OpDeleteAll}, set("a", nil)}, inErr: "only op"},
		{name: "an empty batch is refused", ops: nil, inErr: "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newEntry(tc.ops, testPrefixLen)
			if tc.inErr == "" {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.inErr) || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Errorf("error %v, want one wrapping %v and saying %q", err, tc.wantErr, tc.inErr)
			}
		})
	}
}
