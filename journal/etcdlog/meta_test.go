package etcdlog

import (
	"slices"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestMetaDiff(t *testing.T) {
	cluster := Meta{Codec: 2, Settings: map[string]string{"push.enable-utf8-names": "false", "push.max-series": "100000"}}
	for _, tc := range []struct {
		name string
		mine Meta
		want []string
	}{
		{name: "equal settings differ in nothing", mine: Meta{Codec: 2, Settings: map[string]string{"push.max-series": "100000", "push.enable-utf8-names": "false"}}},
		{
			name: "each differing, missing and extra setting is named, in order",
			mine: Meta{Codec: 3, Settings: map[string]string{"push.enable-utf8-names": "true", "store.max-groups": "5"}},
			want: []string{
				"codec version: cluster 2, this replica 3",
				`push.enable-utf8-names: cluster "false", this replica "true"`,
				`push.max-series: cluster "100000", this replica unset`,
				`store.max-groups: cluster unset, this replica "5"`,
			},
		},
		{
			name: "a later codec that reads the cluster's is no difference",
			mine: Meta{Codec: 3, OldestCodec: 1, Settings: map[string]string{"push.max-series": "100000", "push.enable-utf8-names": "false"}},
		},
		{
			name: "a later codec that does not read the cluster's is one",
			mine: Meta{Codec: 4, OldestCodec: 3, Settings: map[string]string{"push.max-series": "100000", "push.enable-utf8-names": "false"}},
			want: []string{"codec version: cluster 2, this replica 4"},
		},
		{
			name: "an earlier codec is one whatever it reads",
			mine: Meta{Codec: 1, OldestCodec: 1, Settings: map[string]string{"push.max-series": "100000", "push.enable-utf8-names": "false"}},
			want: []string{"codec version: cluster 2, this replica 1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cluster.diff(tc.mine); !slices.Equal(got, tc.want) {
				t.Errorf("diff\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestHeadValueRoundTrips(t *testing.T) {
	lease, seq, ok := parseHead(headValue(0x694d9a3c1f2b0a11, 42))
	if !ok || lease != 0x694d9a3c1f2b0a11 || seq != 42 {
		t.Errorf("parseHead = %x, %d, %v", lease, seq, ok)
	}
	for _, bad := range []string{"", "abc", "zz/1", "1f/x"} {
		if _, _, ok := parseHead(bad); ok {
			t.Errorf("parseHead(%q) accepted", bad)
		}
	}
}

func TestIsOwnTellsTheLogsBatchesFromOthersAndFromDoubtfulOnes(t *testing.T) {
	l := &Log{leases: map[clientv3.LeaseID]struct{}{0x1f: {}}, ambiguous: map[uint64]struct{}{5: {}}}
	for _, tc := range []struct {
		head string
		want bool
	}{
		{"1f/4", true},
		{"1f/5", false}, // its outcome was reported as ambiguous: the store took it back
		{"2a/4", false}, // another writer's lease
		{"garbage", false},
	} {
		if got := l.isOwn([]byte(tc.head)); got != tc.want {
			t.Errorf("isOwn(%q) = %v, want %v", tc.head, got, tc.want)
		}
	}
}
