package etcdlog

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Meta is what every replica sharing a prefix must agree on: how groups
// are encoded and every setting that changes whether a push is accepted.
// The first replica writes it; Open compares the others' with it.
type Meta struct {
	// Codec is the version of the store's group encoding.
	Codec int `json:"codec"`
	// Settings maps a flag name to its value, for every flag that changes
	// validation, such as "push.enable-utf8-names": "false".
	Settings map[string]string `json:"settings,omitempty"`
}

// diff returns one line per difference between the cluster's meta (m) and
// this replica's (mine), in a stable order.
func (m Meta) diff(mine Meta) []string {
	var out []string
	if m.Codec != mine.Codec {
		out = append(out, fmt.Sprintf("codec version: cluster %d, this replica %d", m.Codec, mine.Codec))
	}
	names := slices.Sorted(maps.Keys(m.Settings))
	for n := range mine.Settings {
		if _, ok := m.Settings[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		cv, cok := m.Settings[n]
		mv, mok := mine.Settings[n]
		switch {
		case cok && mok && cv == mv:
		case !cok:
			out = append(out, fmt.Sprintf("%s: cluster unset, this replica %s", n, strconv.Quote(mv)))
		case !mok:
			out = append(out, fmt.Sprintf("%s: cluster %s, this replica unset", n, strconv.Quote(cv)))
		default:
			out = append(out, fmt.Sprintf("%s: cluster %s, this replica %s", n, strconv.Quote(cv), strconv.Quote(mv)))
		}
	}
	return out
}

// checkMeta creates the meta key with this replica's settings if it is
// absent, and otherwise compares them with the stored ones.
func (l *Log) checkMeta(ctx context.Context) error {
	mine, err := json.Marshal(l.cfg.Meta)
	if err != nil {
		return fmt.Errorf("encode meta: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, l.cfg.RequestTimeout)
	defer cancel()
	resp, err := l.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(l.keys.meta), "=", 0)).
		Then(clientv3.OpPut(l.keys.meta, string(mine))).
		Else(clientv3.OpGet(l.keys.meta)).
		Commit()
	if err != nil {
		return fmt.Errorf("create or read %s: %w", l.keys.meta, err)
	}
	if resp.Succeeded {
		l.log.Info("created the cluster's meta key", "key", l.keys.meta, "meta", string(mine))
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return fmt.Errorf("read %s: the key vanished", l.keys.meta)
	}
	var theirs Meta
	if err := json.Unmarshal(kvs[0].Value, &theirs); err != nil {
		return fmt.Errorf("decode %s (%q): %w", l.keys.meta, kvs[0].Value, err)
	}
	if d := theirs.diff(l.cfg.Meta); len(d) > 0 {
		return fmt.Errorf("%w (key %s): %s", ErrMetaMismatch, l.keys.meta, strings.Join(d, "; "))
	}
	return nil
}
