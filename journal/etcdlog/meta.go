package etcdlog

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Meta is what every replica sharing a prefix must agree on: how groups
// are encoded and every setting that changes whether a push is accepted.
// The first replica writes it; Open compares the others' with it.
//
// A replica that reads the cluster's codec but writes a later one (an
// upgrade: see OldestCodec) raises the cluster's codec to its own when it
// opens, provided the settings agree; from then on a replica of the
// earlier version refuses to start.
type Meta struct {
	// Codec is the version of the store's group encoding, the one this
	// replica writes.
	Codec int `json:"codec"`
	// OldestCodec is the oldest encoding version this replica reads (0:
	// Codec only). It is not stored.
	OldestCodec int `json:"-"`
	// Settings maps a flag name to its value, for every flag that changes
	// validation, such as "push.enable-utf8-names": "false".
	Settings map[string]string `json:"settings,omitempty"`
}

// upgrades reports whether mine may raise the cluster's codec version (m)
// to its own: it reads m's and writes a later one.
func (m Meta) upgrades(mine Meta) bool {
	return mine.OldestCodec > 0 && m.Codec >= mine.OldestCodec && m.Codec < mine.Codec
}

// diff returns one line per difference between the cluster's meta (m) and
// this replica's (mine), in a stable order. A codec version mine upgrades
// is no difference.
func (m Meta) diff(mine Meta) []string {
	var out []string
	if m.Codec != mine.Codec && !m.upgrades(mine) {
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
// absent, and otherwise compares them with the stored ones, raising the
// stored codec version to this replica's if it upgrades it (Meta).
//
// It runs while the replica starts, often while etcd's members are still
// electing their leader: a request may then fail with no leader, or with
// the connection the member probes closed under it (probeMembers). Such a
// failure, one whose outcome is unknown (commitError), is sent again, in
// attempts of commitAttempt within Config.RequestTimeout, as a commit is.
// Sending it again is safe: the transaction creates the key only if it is
// absent and reads it otherwise, so an attempt that applied unseen is read
// back as this replica's own meta; and the upgrade is guarded by the mod
// revision it read. A definite refusal (out of space, permission, a
// mismatch of settings) ends it at once.
func (l *Log) checkMeta(ctx context.Context) error {
	mine, err := json.Marshal(l.cfg.Meta)
	if err != nil {
		return fmt.Errorf("encode meta: %w", err)
	}
	deadline := time.Now().Add(l.cfg.RequestTimeout)
	races := 0 // upgrades that lost a race to another replica's write
	for attempt := 1; ; attempt++ {
		start := time.Now()
		end := start.Add(commitAttempt)
		if end.After(deadline) {
			end = deadline
		}
		actx, cancel := context.WithDeadline(ctx, end)
		done, transient, err := l.checkMetaOnce(actx, mine)
		cancel()
		switch {
		case done:
			if attempt > 1 {
				l.log.Info("checked the cluster's meta key after transient failures", "key", l.keys.meta, "attempts", attempt)
			}
			return nil
		case err == nil:
			// Another replica may raise the version between the read
			// and the upgrade's write: read again, a bounded number of
			// times.
			if races++; races == 3 {
				return fmt.Errorf("upgrade %s: the key kept changing", l.keys.meta)
			}
			continue
		case !transient:
			return err
		}
		next := start.Add(commitRetryPause)
		if now := time.Now(); next.Before(now) {
			next = now
		}
		if ctx.Err() != nil || deadline.Sub(next) < commitRetryPause {
			return fmt.Errorf("%w (%d attempts in %s)", err, attempt, l.cfg.RequestTimeout)
		}
		l.log.Debug("checking the cluster's meta key failed; sending it again", "key", l.keys.meta, "attempt", attempt, "err", err)
		select {
		case <-time.After(time.Until(next)):
		case <-ctx.Done():
			return fmt.Errorf("%w (%d attempts): %w", err, attempt, ctx.Err())
		}
	}
}

// checkMetaOnce is one attempt of checkMeta; done is false when an upgrade
// lost a race and checkMeta should read again, or when it failed (err);
// transient tells a failure whose outcome etcd did not decide, which
// checkMeta sends again.
func (l *Log) checkMetaOnce(ctx context.Context, mine []byte) (done, transient bool, err error) {
	resp, err := l.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(l.keys.meta), "=", 0)).
		Then(clientv3.OpPut(l.keys.meta, string(mine))).
		Else(clientv3.OpGet(l.keys.meta)).
		Commit()
	if err != nil {
		err, transient = metaError(err)
		return false, transient, fmt.Errorf("create or read %s: %w", l.keys.meta, err)
	}
	if resp.Succeeded {
		l.log.Info("created the cluster's meta key", "key", l.keys.meta, "meta", string(mine))
		return true, false, nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return false, false, fmt.Errorf("read %s: the key vanished", l.keys.meta)
	}
	var theirs Meta
	if err := json.Unmarshal(kvs[0].Value, &theirs); err != nil {
		return false, false, fmt.Errorf("decode %s (%q): %w", l.keys.meta, kvs[0].Value, err)
	}
	if d := theirs.diff(l.cfg.Meta); len(d) > 0 {
		return false, false, fmt.Errorf("%w (key %s): %s", ErrMetaMismatch, l.keys.meta, strings.Join(d, "; "))
	}
	if !theirs.upgrades(l.cfg.Meta) {
		return true, false, nil
	}
	up, err := l.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(l.keys.meta), "=", kvs[0].ModRevision)).
		Then(clientv3.OpPut(l.keys.meta, string(mine))).
		Commit()
	if err != nil {
		err, transient = metaError(err)
		return false, transient, fmt.Errorf("upgrade %s: %w", l.keys.meta, err)
	}
	if up.Succeeded {
		l.log.Warn("raised the cluster's codec version: replicas of an earlier version cannot read what this one writes, and refuse to start from now on",
			"key", l.keys.meta, "from", theirs.Codec, "to", l.cfg.Meta.Codec)
	}
	return up.Succeeded, false, nil
}

// metaError classifies a failed request of checkMeta as commitError does
// (transient: etcd may not have decided it), keeping a transient error as
// etcd's client returned it.
func metaError(err error) (_ error, transient bool) {
	wrapped, ambiguous := commitError(err)
	if ambiguous {
		return err, true
	}
	return wrapped, false
}
