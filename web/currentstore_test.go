package web

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pushgate/pushgate/store"
)

func TestRequestsWorkOnTheStoreCurrentStoreReturns(t *testing.T) {
	first, second := store.New(store.Options{}), store.New(store.Options{})
	var current atomic.Pointer[store.Store]
	current.Store(first)
	h, err := New(first, prometheus.NewRegistry(), Options{CurrentStore: current.Load})
	if err != nil {
		t.Fatal(err)
	}
	if w := do(t, h, http.MethodPut, "/metrics/job/a", []byte("only_in_first 1\n"), nil); w.Code != http.StatusOK {
		t.Fatalf("push to the first store: %d %s", w.Code, w.Body)
	}
	current.Store(second)
	if w := do(t, h, http.MethodPut, "/metrics/job/b", []byte("only_in_second 1\n"), nil); w.Code != http.StatusOK {
		t.Fatalf("push to the second store: %d %s", w.Code, w.Body)
	}
	if first.Stats().Groups != 1 || second.Stats().Groups != 1 {
		t.Fatalf("groups: first %d, second %d; want one each", first.Stats().Groups, second.Stats().Groups)
	}
	body := do(t, h, http.MethodGet, "/metrics", nil, nil).Body.String()
	if strings.Contains(body, "only_in_first") || !strings.Contains(body, "only_in_second") {
		t.Errorf("the scrape after the swap does not serve the second store:\n%s", body)
	}
	if !strings.Contains(body, "\npushgate_groups 1\n") {
		t.Errorf("pushgate_groups does not count the second store's groups:\n%s", body)
	}
}
