package etcdlog

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// metaKV stands in for etcd's KV service in checkMeta's tests: it holds the
// meta key, applies the two transactions checkMeta sends, and fails the
// commits listed in faults, in order (nil: no fault), either before
// applying (the request never reached etcd) or after (the answer was lost).
type metaKV struct {
	clientv3.KV // only Txn is used
	value       string
	createRev   int64
	modRev      int64
	rev         int64
	faults      []metaFault
	commits     int
}

type metaFault struct {
	err          error
	afterApplied bool
}

func (kv *metaKV) Txn(context.Context) clientv3.Txn { return &metaTxn{kv: kv} }

type metaTxn struct {
	kv        *metaKV
	cmps      []clientv3.Cmp
	then, els []clientv3.Op
}

func (t *metaTxn) If(cs ...clientv3.Cmp) clientv3.Txn   { t.cmps = cs; return t }
func (t *metaTxn) Then(ops ...clientv3.Op) clientv3.Txn { t.then = ops; return t }
func (t *metaTxn) Else(ops ...clientv3.Op) clientv3.Txn { t.els = ops; return t }

func (t *metaTxn) Commit() (*clientv3.TxnResponse, error) {
	kv := t.kv
	kv.commits++
	var fault metaFault
	if len(kv.faults) > 0 {
		fault, kv.faults = kv.faults[0], kv.faults[1:]
	}
	if fault.err != nil && !fault.afterApplied {
		return nil, fault.err
	}
	ok := true
	for _, c := range t.cmps {
		pc := c.GetCompare()
		switch pc.Target {
		case pb.Compare_CREATE:
			ok = ok && kv.createRev == pc.GetCreateRevision()
		case pb.Compare_MOD:
			ok = ok && kv.modRev == pc.GetModRevision()
		}
	}
	resp := &clientv3.TxnResponse{Succeeded: ok}
	ops := t.els
	if ok {
		ops = t.then
	}
	for _, op := range ops {
		switch {
		case op.IsPut():
			kv.rev++
			if kv.createRev == 0 {
				kv.createRev = kv.rev
			}
			kv.modRev, kv.value = kv.rev, string(op.ValueBytes())
			resp.Responses = append(resp.Responses, &pb.ResponseOp{Response: &pb.ResponseOp_ResponsePut{ResponsePut: &pb.PutResponse{}}})
		case op.IsGet():
			rr := &pb.RangeResponse{}
			if kv.createRev != 0 {
				rr.Kvs = []*mvccpb.KeyValue{{Key: op.KeyBytes(), Value: []byte(kv.value), CreateRevision: kv.createRev, ModRevision: kv.modRev}}
			}
			resp.Responses = append(resp.Responses, &pb.ResponseOp{Response: &pb.ResponseOp_ResponseRange{ResponseRange: rr}})
		}
	}
	if fault.err != nil {
		return nil, fault.err
	}
	return resp, nil
}

func metaTestLog(kv *metaKV, meta Meta, timeout time.Duration) *Log {
	return &Log{
		cfg:    Config{Meta: meta, RequestTimeout: timeout},
		keys:   keysFor("/pushgate/test/"),
		log:    slog.New(slog.DiscardHandler),
		client: &clientv3.Client{KV: kv},
	}
}

// closedConn is the error the etcd client returned when the member probes
// closed the connection a replica's first meta transaction was sent on,
// while etcd's members were still electing their leader: the replica then
// failed to start.
var closedConn = status.Error(codes.Unavailable, "error reading from server: read tcp 127.0.0.1:40122->127.0.0.1:2379: use of closed network connection")

func TestCheckMetaSendsAgainWhatEtcdDidNotDecide(t *testing.T) {
	mine := Meta{Codec: 3, Settings: map[string]string{"push.max-series": "100000"}}
	mineJSON, _ := json.Marshal(mine)
	for _, tc := range []struct {
		name        string
		stored      *Meta // the meta key before Open (nil: absent)
		faults      []metaFault
		wantCommits int
		wantStored  Meta
	}{
		{
			name:        "a closed connection before the key was created",
			faults:      []metaFault{{err: closedConn}},
			wantCommits: 2,
			wantStored:  mine,
		},
		{
			name:        "a closed connection after the key was created: the next attempt reads it back as its own",
			faults:      []metaFault{{err: closedConn, afterApplied: true}},
			wantCommits: 2,
			wantStored:  mine,
		},
		{
			name:        "no leader yet, then an attempt that timed out",
			faults:      []metaFault{{err: rpctypes.ErrNoLeader}, {err: context.DeadlineExceeded}},
			wantCommits: 3,
			wantStored:  mine,
		},
		{
			name:        "an upgrade whose answer was lost is read back, not made twice",
			stored:      &Meta{Codec: 2, Settings: mine.Settings},
			faults:      []metaFault{{}, {err: closedConn, afterApplied: true}},
			wantCommits: 3, // read, upgrade (answer lost), read (its own now)
			wantStored:  mine,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kv := &metaKV{faults: tc.faults}
			if tc.stored != nil {
				b, _ := json.Marshal(tc.stored)
				kv.value, kv.rev, kv.createRev, kv.modRev = string(b), 7, 7, 7
			}
			m := mine
			m.OldestCodec = 2
			if err := metaTestLog(kv, m, 5*time.Second).checkMeta(context.Background()); err != nil {
				t.Fatalf("checkMeta: %v", err)
			}
			if kv.value != string(mineJSON) {
				t.Errorf("the meta key holds %s, want %s", kv.value, mineJSON)
			}
			if kv.commits != tc.wantCommits {
				t.Errorf("%d transactions sent, want %d", kv.commits, tc.wantCommits)
			}
		})
	}
}

func TestCheckMetaStopsAtARefusalOrItsTimeout(t *testing.T) {
	mine := Meta{Codec: 3}
	t.Run("a refusal is not sent again", func(t *testing.T) {
		kv := &metaKV{faults: []metaFault{{err: rpctypes.ErrPermissionDenied}}}
		err := metaTestLog(kv, mine, 5*time.Second).checkMeta(context.Background())
		if !errors.Is(err, rpctypes.ErrPermissionDenied) || kv.commits != 1 {
			t.Errorf("checkMeta = %v after %d transactions, want the refusal after 1", err, kv.commits)
		}
	})
	t.Run("different settings are not sent again", func(t *testing.T) {
		kv := &metaKV{value: `{"codec":2}`, rev: 3, createRev: 3, modRev: 3}
		err := metaTestLog(kv, mine, 5*time.Second).checkMeta(context.Background())
		if !errors.Is(err, ErrMetaMismatch) || kv.commits != 1 {
			t.Errorf("checkMeta = %v after %d transactions, want ErrMetaMismatch after 1", err, kv.commits)
		}
	})
	t.Run("an etcd that never answers fails it within the request timeout", func(t *testing.T) {
		faults := make([]metaFault, 100)
		for i := range faults {
			faults[i] = metaFault{err: closedConn}
		}
		kv := &metaKV{faults: faults}
		err := metaTestLog(kv, mine, 500*time.Millisecond).checkMeta(context.Background())
		if err == nil || !strings.Contains(err.Error(), "use of closed network connection") || !strings.Contains(err.Error(), "attempts in 500ms") {
			t.Errorf("checkMeta = %v, want the last error and the attempts it made", err)
		}
		if kv.commits < 2 {
			t.Errorf("%d transactions sent, want it sent again within the timeout", kv.commits)
		}
	})
}
