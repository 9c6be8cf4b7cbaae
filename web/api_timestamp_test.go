package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pushgate/pushgate/exposition"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/store"
)

// apiTimeStamps returns each family's time_stamp in the only group of an
// /api/v1/metrics answer.
func apiTimeStamps(t *testing.T, h http.Handler) map[string]string {
	t.Helper()
	var resp struct {
		Data []map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(apiDo(h, http.MethodGet, "/api/v1/metrics").Body.Bytes(), &resp); err != nil || len(resp.Data) != 1 {
		t.Fatalf("want one group: %v %v", resp, err)
	}
	out := map[string]string{}
	for name, raw := range resp.Data[0] {
		var f struct {
			TimeStamp string `json:"time_stamp"`
		}
		if json.Unmarshal(raw, &f) == nil && f.TimeStamp != "" {
			out[name] = f.TimeStamp
		}
	}
	return out
}

func TestAPITimeStampsAreThoseOfTheRequestsThatWroteEachFamily(t *testing.T) {
	t1, t2 := apiT0.Add(time.Second), apiT0.Add(2*time.Second)
	at := func(tm time.Time) string { return tm.Format(time.RFC3339Nano) }
	failWith := func(t *testing.T, st *store.Store, tm time.Time) {
		t.Helper()
		decoded, err := exposition.Decode(strings.NewReader("m 1 1000\n"), "", exposition.DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = st.Push(context.Background(), store.Push{Key: groupkey.New(map[string]string{"job": "j"}), Method: store.Replace, Families: decoded.Families, Time: tm})
		if err == nil {
			t.Fatal("a push with a sample timestamp was accepted")
		}
	}
	cases := []struct {
		name  string
		write func(t *testing.T, st *store.Store)
		want  map[string]string
	}{
		{"after one successful push, every family has its time", func(t *testing.T, st *store.Store) {
			apiPushText(t, st, apiT0, "m 1\n", "job", "j")
		}, map[string]string{"m": at(apiT0), store.PushTimeName: at(apiT0), store.PushFailureTimeName: at(apiT0)}},
		{"a failure after a push stamps only the failure time", func(t *testing.T, st *store.Store) {
			apiPushText(t, st, apiT0, "m 1\n", "job", "j")
			failWith(t, st, t1)
		}, map[string]string{"m": at(apiT0), store.PushTimeName: at(apiT0), store.PushFailureTimeName: at(t1)}},
		{"a group created by a failure has the failure's time on both", func(t *testing.T, st *store.Store) {
			failWith(t, st, t1)
		}, map[string]string{store.PushTimeName: at(t1), store.PushFailureTimeName: at(t1)}},
		{"a push after a failure stamps the push time and keeps the failure's", func(t *testing.T, st *store.Store) {
			failWith(t, st, t1)
			apiPushText(t, st, t2, "m 1\n", "job", "j")
		}, map[string]string{"m": at(t2), store.PushTimeName: at(t2), store.PushFailureTimeName: at(t1)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, st := apiTestHandler(t)
			tc.write(t, st)
			got := apiTimeStamps(t, h)
			for name, want := range tc.want {
				if got[name] != want {
					t.Errorf("%s.time_stamp = %q, want %q (all: %v)", name, got[name], want, got)
				}
			}
		})
	}
}
