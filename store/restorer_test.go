package store

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/pushgate/pushgate/exposition"
)

// record is a stored group as a journal or the cluster's log holds it.
type record struct {
	key   string
	value []byte
}

// recordsOf returns src's groups as records.
func recordsOf(src *Store) []record {
	var rs []record
	for _, g := range src.Groups() {
		rs = append(rs, record{g.Key().ID(), encodeGroup(g)})
	}
	return rs
}

// conflictingRecords returns two records, each valid alone, whose groups
// expose the same series m{instance="x",job="a"}.
func conflictingRecords(t *testing.T) (record, record) {
	t.Helper()
	a, b := New(Options{}), New(Options{})
	if err := push(t, a, key("job", "a"), Replace, "m{instance=\"x\"} 1\n", t0); err != nil {
		t.Fatal(err)
	}
	if err := push(t, b, key("job", "a", "instance", "x"), Replace, "m 2\n", t0); err != nil {
		t.Fatal(err)
	}
	return recordsOf(a)[0], recordsOf(b)[0]
}

func TestARestorerLoadsWhatRestoreLoadsSkippingTheSameRecords(t *testing.T) {
	src := filledStore(t, 300)
	first, second := conflictingRecords(t)
	for _, tc := range []struct {
		name string
		last []record
		want string // the job and instance of the group the conflict keeps
	}{
		{"the first of two conflicting records handed over wins", []record{first, second}, "a/"},
		{"in the other order the other one wins", []record{second, first}, "a/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			records := append(recordsOf(src), tc.last...)
			want, got := New(Options{}), New(Options{})
			for _, r := range records {
				if err := want.Restore(r.key, r.value); err != nil {
					t.Fatal(err)
				}
			}
			rs := got.NewRestorer(4)
			for _, r := range records {
				if err := rs.Restore(r.key, r.value); err != nil {
					t.Fatal(err)
				}
			}
			if err := rs.Close(); err != nil {
				t.Fatal(err)
			}
			var kept []string
			for _, g := range got.Groups() {
				if job, _ := g.Key().Get("job"); job == "a" {
					instance, _ := g.Key().Get("instance")
					kept = append(kept, job+"/"+instance)
				}
			}
			if len(kept) != 1 || kept[0] != tc.want {
				t.Errorf("the conflict kept %v, want [%s]", kept, tc.want)
			}
			for _, enc := range []exposition.Encoding{exposition.EncodingText, exposition.EncodingProtobuf} {
				if w, g := scrapeBytes(t, want, enc), scrapeBytes(t, got, enc); !bytes.Equal(w, g) {
					t.Errorf("%s: the Restorer's store scrapes %d bytes unlike Restore's %d", enc, len(g), len(w))
				}
			}
		})
	}
}

func TestARestorerFailsOnARecordItCannotDecode(t *testing.T) {
	records := recordsOf(filledStore(t, 50))
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
