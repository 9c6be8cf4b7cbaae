package etcdlog

import (
	"bytes"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pushgate/pushgate/groupcodec"
	"github.com/pushgate/pushgate/journal"
)

// watchEvent is a put (value non-nil, stored as Append stores it) or a
// delete of key at revision rev, as a watch delivers it.
func watchEvent(key string, rev int64, value []byte) *clientv3.Event {
	ev := &clientv3.Event{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte(key), ModRevision: rev}}
	if value != nil {
		ev.Type, ev.Kv.Value = mvccpb.PUT, stored(value)
	}
	return ev
}

func TestDeliveredValuesAreTheDecompressedGroupsOfEachRevision(t *testing.T) {
	l := &Log{keys: keysFor("/pushgate/")}
	g := l.keys.groups
	record := groupcodec.Encode(&groupcodec.Group{Labels: []groupcodec.Label{{Name: "job", Value: "e"}}})
	oldRecord := []byte{2, 0, 0, 0, 0, 0} // version 2, compressed when stored
	events := []*clientv3.Event{
		watchEvent(g+"a", 5, bytes.Repeat([]byte("a"), 3000)),
		watchEvent(g+"b", 5, incompressible(700)),
		watchEvent(g+"c", 5, nil),
		watchEvent(l.keys.head, 5, []byte("other/1")),
		watchEvent(g+"a", 6, incompressible(5000)), // larger than revision 5's values together
		watchEvent(l.keys.head, 6, []byte("other/2")),
		watchEvent(g+"d", 7, []byte("d")),
		watchEvent(l.keys.head, 7, []byte("other/3")),
		watchEvent(g+"e", 8, record),
		watchEvent(g+"f", 8, oldRecord),
		watchEvent(l.keys.head, 8, []byte("other/4")),
	}
	want := []journal.Batch{
		{Position: 5, Ops: []journal.Op{set("a", bytes.Repeat([]byte("a"), 3000)), set("b", incompressible(700)), del("c")}},
		{Position: 6, Ops: []journal.Op{set("a", incompressible(5000))}},
		{Position: 7, Ops: []journal.Op{set("d", []byte("d"))}},
		{Position: 8, Ops: []journal.Op{set("e", record), set("f", oldRecord)}},
	}
	var got []journal.Batch
	var values []byte
	err := l.deliver(events, &values, func(b journal.Batch) error {
		// Copy: the values are only valid until fn returns.
		c := journal.Batch{Position: b.Position, Own: b.Own}
		for _, op := range b.Ops {
			op.Value = bytes.Clone(op.Value)
			c.Ops = append(c.Ops, op)
		}
		got = append(got, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("delivered\n%v\nwant\n%v", got, want)
	}
}

// BenchmarkDeliver measures a follower's watch delivery of revisions of
// one 5 KB group each, as the leader commits pushes at low concurrency.
func BenchmarkDeliver(b *testing.B) {
	l := &Log{keys: keysFor("/pushgate/")}
	value := bytes.Repeat([]byte("metric_name{job=\"bench\",instance=\"i1\"} 1\n"), 5000/42)
	var events []*clientv3.Event
	for rev := int64(1); rev <= 100; rev++ {
		events = append(events, watchEvent(fmt.Sprintf("%sg%d", l.keys.groups, rev), rev, value),
			watchEvent(l.keys.head, rev, []byte("other/1")))
	}
	var values []byte
	b.ReportAllocs()
	for b.Loop() {
		if err := l.deliver(events, &values, func(journal.Batch) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
