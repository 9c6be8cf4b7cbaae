package store

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/pushgate/pushgate/internal/storetest"
)

func TestABulkDeleteOverTheLogsBatchLimitIsSplitIntoBatchesWithinIt(t *testing.T) {
	s := New(Options{MaxBatchOps: 3})
	for i := range 7 {
		if err := push(t, s, storetest.Key("job", fmt.Sprint(i)), Replace, fmt.Sprintf("m%d 1\n", i), t0); err != nil {
			t.Fatal(err)
		}
	}
	log := &recordingLog{}
	s.SetJournal(log)
	keys, _, err := s.DeleteWhere(context.Background(), func(*Group) bool { return true }, false)
	if err != nil || len(keys) != 7 {
		t.Fatalf("DeleteWhere = %d keys, %v; want 7, nil", len(keys), err)
	}
	var sizes []int
	for _, b := range log.batches {
		sizes = append(sizes, len(b))
	}
	if !slices.Equal(sizes, []int{3, 3, 1}) {
		t.Errorf("batches of %v ops, want [3 3 1]", sizes)
	}
	if n := s.Stats().Groups; n != 0 {
		t.Errorf("%d groups left", n)
	}
}
