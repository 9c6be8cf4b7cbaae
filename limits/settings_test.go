package limits

import (
	"reflect"
	"strings"
	"testing"
)

func TestEveryLimitHasOneSettingAndEverySettingOneLimit(t *testing.T) {
	var l Limits
	v := reflect.ValueOf(&l).Elem()
	fields := map[uintptr]string{}
	for i := range v.NumField() {
		fields[v.Field(i).Addr().Pointer()] = v.Type().Field(i).Name
	}
	seen := map[string]string{}
	flags := map[string]bool{}
	for _, s := range Settings() {
		if flags[s.Flag] {
			t.Errorf("flag %q is listed twice", s.Flag)
		}
		flags[s.Flag] = true
		if !strings.HasPrefix(s.Flag, "push.") && !strings.HasPrefix(s.Flag, "store.") {
			t.Errorf("flag %q is neither a push. nor a store. flag", s.Flag)
		}
		if s.Help == "" || s.Default <= 0 {
			t.Errorf("flag %q has help %q and default %d", s.Flag, s.Help, s.Default)
		}
		name, ok := fields[reflect.ValueOf(s.Field(&l)).Pointer()]
		if !ok {
			t.Errorf("flag %q sets no field of Limits", s.Flag)
			continue
		}
		if other, dup := seen[name]; dup {
			t.Errorf("Limits.%s is set by both %q and %q", name, other, s.Flag)
		}
		seen[name] = s.Flag
	}
	for _, name := range fields {
		if _, ok := seen[name]; !ok {
			t.Errorf("Limits.%s has no Setting: no flag, metric or cluster setting would show it", name)
		}
	}
}

func TestValuesNamesEachLimitByItsFlag(t *testing.T) {
	l := Limits{MaxSeriesPerPush: 1, MaxLabelsPerSeries: 2, MaxLabelNameLength: 3, MaxLabelValueLength: 4, MaxGroups: 5, MaxSeries: 6}
	want := map[string]int{
		"push.max-series": 1, "push.max-labels-per-series": 2, "push.max-label-name-length": 3,
		"push.max-label-value-length": 4, "store.max-groups": 5, "store.max-series": 6,
	}
	if got := l.Values(); !reflect.DeepEqual(got, want) {
		t.Errorf("Values() = %v, want %v", got, want)
	}
	d := Default()
	if d.MaxSeriesPerPush != DefaultMaxSeriesPerPush || d.MaxSeries != DefaultMaxSeries || d.MaxGroups != DefaultMaxGroups {
		t.Errorf("Default() = %+v", d)
	}
}
