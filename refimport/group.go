package refimport

import (
	"math"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/journal/gobfile"
	"github.com/pushgate/pushgate/store"
)

// importedGroup converts a reference group: its push_time_seconds and
// push_failure_time_seconds families become its push times, the others its
// pushed families.
func importedGroup(rg gobfile.Group) store.ImportedGroup {
	g := store.ImportedGroup{Key: groupkey.New(rg.Labels)}
	for _, f := range rg.Families {
		switch f.Family.GetName() {
		case store.PushTimeName:
			g.PushTime = gaugeTime(f.Family)
		case store.PushFailureTimeName:
			g.FailureTime = gaugeTime(f.Family)
		default:
			g.Families = append(g.Families, store.ImportedFamily{Family: f.Family, LastPush: f.LastPush})
		}
	}
	return g
}

// gaugeTime reads a timestamp family's value as a time; 0 is the zero time.
func gaugeTime(mf *dto.MetricFamily) time.Time {
	if len(mf.Metric) == 0 {
		return time.Time{}
	}
	v := mf.Metric[0].GetGauge().GetValue()
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return time.Time{}
	}
	sec, frac := math.Modf(v)
	return time.Unix(int64(sec), int64(frac*1e9))
}
