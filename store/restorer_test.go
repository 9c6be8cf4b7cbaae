package store

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/internal/storetest"
	"github.com/pushgate/pushgate/journal"
)

// record is a stored group as a journal or the cluster's log holds it.
type record struct {
	key   string
	value []byte
}

// recordsOf returns src's groups as records.
func recordsOf(t testing.TB, src *Store) []record {
	var rs []record
	for _, g := range src.Groups() {
		rs = append(rs, record{g.Key().ID(), testRecord(t, g)})
	}
	return rs
}

// conflictingRecords returns two records, each valid alone, whose groups
// expose the same series m{instance="x",job="a"}.
func conflictingRecords(t *testing.T) (record, record) {
	t.Helper()
	a, b := New(Options{}), New(Options{})
	if err := push(t, a, storetest.Key("job", "a"), Replace, "m{instance=\"x\"} 1\n", t0); err != nil {
		t.Fatal(err)
	}
	if err := push(t, b, storetest.Key("job", "a", "instance", "x"), Replace, "m 2\n", t0); err != nil {
		t.Fatal(err)
	}
	return recordsOf(t, a)[0], recordsOf(t, b)[0]
}

// TestEveryLogReaderBuildsTheSameStoreFromConflictingRecords: a log
// holding two groups that expose one series (as an older version could
// write) gives byte-identical scrapes whether it was restored record by
// record, by a Restorer, or applied batch by batch as a follower does,
// and in either order: one conflict rule (apply, count) for all of them.
// Before, restore skipped the later record and Apply installed it, so a
// replica that loaded the log and one that followed it differed.
func TestEveryLogReaderBuildsTheSameStoreFromConflictingRecords(t *testing.T) {
	src := filledStore(t, 300)
	first, second := conflictingRecords(t)
	var reference map[exposition.Encoding][]byte
	for _, order := range [][]record{{first, second}, {second, first}} {
		records := append(recordsOf(t, src), order...)
		restored, restorer, applied := New(Options{}), New(Options{}), New(Options{})
		for _, r := range records {
			if err := restored.Restore(r.key, r.value); err != nil {
				t.Fatal(err)
			}
		}
		rs := restorer.NewRestorer(4)
		for _, r := range records {
			if err := rs.Restore(r.key, r.value); err != nil {
				t.Fatal(err)
			}
		}
		if err := rs.Close(); err != nil {
			t.Fatal(err)
		}
		for i, r := range records {
			if err := applied.Apply(journal.Position(i+1), []journal.Op{{Kind: journal.OpSet, Key: r.key, Value: r.value}}); err != nil {
				t.Fatal(err)
			}
		}
		for name, st := range map[string]*Store{"Restore": restored, "Restorer": restorer, "Apply": applied} {
			var kept []string
			for _, g := range st.Groups() {
				if job, _ := g.Key().Get("job"); job == "a" {
					instance, _ := g.Key().Get("instance")
					kept = append(kept, job+"/"+instance)
				}
			}
			if len(kept) != 2 {
				t.Errorf("%s kept %v of the two conflicting groups, want both", name, kept)
			}
			if n := st.ApplyConflicts(); n != 1 {
				t.Errorf("%s counted %d conflicts, want 1", name, n)
			}
			for _, enc := range []exposition.Encoding{exposition.EncodingText, exposition.EncodingProtobuf} {
				got := scrapeBytes(t, st, enc)
				if reference == nil {
					reference = map[exposition.Encoding][]byte{}
				}
				if want, ok := reference[enc]; !ok {
					reference[enc] = got
				} else if !bytes.Equal(want, got) {
					t.Errorf("%s, records in order %s first: %s scrape of %d bytes differs from the first store's %d",
						name, order[0].key, enc, len(got), len(want))
				}
			}
		}
	}
}

func TestARestorerFailsOnARecordItCannotDecode(t *testing.T) {
	records := recordsOf(t, filledStore(t, 50))
	bad := record{"broken", []byte{99, 1, 2, 3}}
	records = append(records[:10:10], append([]record{bad}, records[10:]...)...)
	rs := New(Options{}).NewRestorer(2)
	var err error
	for _, r := range records {
		if err = rs.Restore(r.key, r.value); err != nil {
			break
		}
	}
	closeErr := rs.Close()
	if closeErr == nil || !bytes.Contains([]byte(closeErr.Error()), []byte(`"broken"`)) {
		t.Fatalf("Close = %v, want the error of record \"broken\"", closeErr)
	}
	if err != nil && !errors.Is(err, closeErr) && err.Error() != closeErr.Error() {
		t.Errorf("Restore failed with %v, Close with %v: want the same error", err, fmt.Sprint(closeErr))
	}
}
