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

// preparedFamily is a pushed family after the checks that need nothing but
// the push itself (admission.Family), as the store's index and newFamily
// read it.
type preparedFamily struct {
	mf     *dto.MetricFamily
	series []uint64
	// plain is exposition.LegacyNames(mf): every name in it is a legacy
	// one, so its text is rendered at push time.
	plain bool
	// labels holds the family's distinct label names, sorted, under the
	// UTF-8 name rules only; nil otherwise.
	labels []string
}

// prepare runs a push's stateless admission stages (admission.Check) and
// returns its families as the store reads them.
func prepare(key groupkey.Key, families []*dto.MetricFamily, utf8Names bool, lim limits.Limits, seed maphash.Seed) ([]preparedFamily, error) {
	checked, err := admission.Check(key, families, admission.Options{UTF8Names: utf8Names, Limits: lim, Seed: seed})
	if err != nil {
		return nil, err
	}
	out := make([]preparedFamily, len(checked))
	for i, f := range checked {
		out[i] = preparedFamily{mf: f.MF, series: f.Series, plain: f.Plain, labels: f.Labels}
	}
	return out, nil
}
