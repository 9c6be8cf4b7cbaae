package etcdtest

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	pgcluster "github.com/pushgate/pushgate/cluster"
	"github.com/pushgate/pushgate/groupcodec"
	"github.com/pushgate/pushgate/journal/etcdlog"
	"github.com/pushgate/pushgate/store"
)

// productMeta is the product's meta (cmd/pushgate's codec and a setting),
// so that the stores write the records they write in production.
var productMeta = etcdlog.Meta{
	Codec:       groupcodec.Version,
	OldestCodec: groupcodec.OldestVersion,
	Settings:    map[string]string{"push.enable-utf8-names": "false"},
}

// newProductReplica returns a cluster replica on l, advertised at url,
// whose stores are built as cmd/pushgate builds a cluster replica's.
func newProductReplica(l *etcdlog.Log, url string, logger *slog.Logger) *pgcluster.Replica {
	return pgcluster.New(pgcluster.Config{
		Log:          l,
		NewStore:     func() *store.Store { return store.New(store.Options{MaxBatchOps: 127, Logger: logger}) },
		AdvertiseURL: url,
		Logger:       logger,
	})
}

// startProductReplica runs a replica as cmd/pushgate configures one, on
// prefix through endpoints (its log's settings tweaked by tweak, if not
// nil), until the test ends, and waits up to within until it is ready.
// name tells the test's replicas apart in their URLs and logs.
func startProductReplica(t *testing.T, endpoints []string, prefix, name string, within time.Duration, tweak func(*etcdlog.Config)) *pgcluster.Replica {
	t.Helper()
	url := fmt.Sprintf("http://replica-%d.%s.test", prefixes.Add(1), name)
	logger := testLogger(t).With("replica", url)
	l := openLog(t, endpoints, prefix, func(cfg *etcdlog.Config) {
		cfg.AdvertiseURL = url
		cfg.Meta = productMeta
		cfg.Logger = logger
		if tweak != nil {
			tweak(cfg)
		}
	})
	r := newProductReplica(l, url, logger)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Run(ctx)
	}()
	// Registered after openLog's: Run ends before the log closes.
	t.Cleanup(func() {
		cancel()
		<-done
	})
	eventually(t, within, "the replica is ready", r.Ready)
	return r
}
