package web

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestUIStatusShowsTheClusterStateOfAReplica(t *testing.T) {
	h, _ := apiTestHandler(t, func(o *Options) {
		o.Storage = func() StorageStatus {
			return ClusterStatus{
				Endpoints: []string{"http://127.0.0.1:2379", "http://127.0.0.1:22379"},
				Leader:    "http://10.0.0.2:9091", Ready: true, Applied: 1200, Committed: 1234, Rebuilds: 2,
				Err: errors.New("etcd session lost"),
			}
		}
	})
	page := uiGet(t, h, "/status", http.StatusOK)
	requireContains(t, page,
		"<code>http://127.0.0.1:2379, http://127.0.0.1:22379</code>",
		"follower: forwards writes to the leader",
		"<code>http://10.0.0.2:9091</code>",
		"<tr><th>Applied position</th><td>1200</td></tr>",
		"1234 (lag 34)",
		"<tr><th>Store rebuilds</th><td>2</td></tr>",
		"etcd session lost",
	)
	if strings.Contains(page, "Journal") {
		t.Error("a cluster replica's status page shows journal rows")
	}
}
