package groupkey

import (
	"log/slog"
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

func TestAKeyLogsAsItsLabelSetInEveryHandler(t *testing.T) {
	k := New(map[string]string{"job": "j", "a": "x y"})
	for _, tc := range []struct {
		name string
		h    func(*strings.Builder) slog.Handler
		want string
	}{
		{"text", func(b *strings.Builder) slog.Handler { return slog.NewTextHandler(b, nil) }, `group="{a=\"x y\",job=\"j\"}"`},
		{"json", func(b *strings.Builder) slog.Handler { return slog.NewJSONHandler(b, nil) }, `"group":"{a=\"x y\",job=\"j\"}"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			slog.New(tc.h(&b)).Info("m", "group", k)
			if !strings.Contains(b.String(), tc.want) {
				t.Fatalf("logged %s, want it to hold %s", b.String(), tc.want)
			}
		})
	}
}
