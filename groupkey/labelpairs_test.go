package groupkey

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// render writes label pairs as a=v,b=w for comparisons.
func render(pairs []*dto.LabelPair) string {
	var b strings.Builder
	for i, lp := range pairs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(lp.GetName() + "=" + lp.GetValue())
	}
	return b.String()
}

func TestLabelPairs(t *testing.T) {
	tests := []struct {
		name         string
		key          map[string]string
		withInstance bool
		want         string
	}{
		{"the key's labels in order", map[string]string{"job": "j", "a": "1"}, false, "a=1,job=j"},
		{"instance is added in its place when asked for", map[string]string{"job": "j", "a": "1"}, true, "a=1,instance=,job=j"},
		{"instance is added last when it sorts last", map[string]string{"a": "1"}, true, "a=1,instance="},
		{"the key's own instance is not added twice", map[string]string{"job": "j", "instance": "i"}, true, "instance=i,job=j"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(New(tt.key).LabelPairs(tt.withInstance)); got != tt.want {
				t.Errorf("LabelPairs = %s, want %s", got, tt.want)
			}
		})
	}
}
