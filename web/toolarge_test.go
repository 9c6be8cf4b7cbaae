package web

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pushgate/pushgate/journal"
	"github.com/pushgate/pushgate/store"
)

// sizeLimitedLog refuses every append as too large, naming its limit, as
// the etcd backend does for a group over its request limit.
type sizeLimitedLog struct{}

func (sizeLimitedLog) Append(...journal.Op) (journal.Commit, error) {
	return nil, fmt.Errorf("group of 2000000 bytes over the 1.4 MiB request limit: %w", journal.ErrTooLarge)
}

func TestAGroupTheLogRefusesForItsSizeAnswers413NamingTheLimit(t *testing.T) {
	st := store.New(store.Options{})
	st.SetJournal(sizeLimitedLog{})
	h, err := New(st, prometheus.NewRegistry(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := do(t, h, http.MethodPut, "/metrics/job/big", []byte("g 1\n"), nil)
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "1.4 MiB request limit") {
		t.Fatalf("push = %d %q, want 413 naming the limit", w.Code, w.Body)
	}
	if st.Stats().Groups != 0 {
		t.Errorf("%d groups stored after the refusal, want 0", st.Stats().Groups)
	}
}
