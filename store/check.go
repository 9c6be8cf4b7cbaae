package store

import (
	"hash/maphash"

	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/admission"
	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/limits"
)

// Names of the synthetic families the gateway keeps for every group (see
// admission.PushTimeName).
const (
	PushTimeName        = admission.PushTimeName
	PushFailureTimeName = admission.PushFailureTimeName
)

// prepare runs a push's stateless admission stages (admission.CheckWith,
// with the buffers sc, nil for fresh ones) under the store's name rules and
// seed.
func prepare(key groupkey.Key, families []*dto.MetricFamily, utf8Names bool, lim limits.Limits, seed maphash.Seed, sc *admission.Scratch) ([]admission.Family, error) {
	return admission.CheckWith(key, families, admission.Options{UTF8Names: utf8Names, Limits: lim, Seed: seed}, sc)
}
