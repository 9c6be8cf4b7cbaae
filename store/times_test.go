package store

import (
	"testing"
	"time"

	"github.com/pushgate/pushgate/internal/storetest"
)

func TestAGroupThatNeverSucceededHasPushTimeZero(t *testing.T) {
	s := New(Options{})
	k := storetest.Key("job", "failing")
	if err := push(t, s, k, Replace, "m 1 123\n", t0); err == nil {
		t.Fatal("a timestamped push was accepted")
	}
	_, fams := scrape(t, s)
	labels := map[string]string{"job": "failing", "instance": ""}
	if v, ok := storetest.Value(fams, PushTimeName, labels); !ok || v != 0 {
		t.Errorf("push_time_seconds = %v (present %v), want 0", v, ok)
	}
	if v, ok := storetest.Value(fams, PushFailureTimeName, labels); !ok || v != float64(t0.UnixNano())/1e9 {
		t.Errorf("push_failure_time_seconds = %v (present %v), want %v", v, ok, float64(t0.UnixNano())/1e9)
	}
	if got := unixSeconds(time.Unix(1, 500_000_000).UnixNano()); got != 1.5 {
		t.Errorf("unixSeconds(1.5 s after the epoch) = %v", got)
	}
}
