package limits

import "testing"

func TestDefaultLimitsAreTheDocumentedOnes(t *testing.T) {
	want := Limits{MaxSeriesPerPush: 100_000, MaxLabelsPerSeries: 64, MaxLabelNameLength: 1024, MaxLabelValueLength: 16384, MaxGroups: 1_000_000, MaxSeries: 20_000_000}
	if got := Default(); got != want {
		t.Fatalf("Default() = %+v, want %+v", got, want)
	}
}
