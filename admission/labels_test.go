package admission

import (
	"errors"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/limits"
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

// pairs builds label pairs from name, value, name, value, ...
func pairs(nv ...string) []*dto.LabelPair {
	out := make([]*dto.LabelPair, 0, len(nv)/2)
	for i := 0; i+1 < len(nv); i += 2 {
		out = append(out, &dto.LabelPair{Name: proto.String(nv[i]), Value: proto.String(nv[i+1])})
	}
	return out
}

func TestLabelerLabels(t *testing.T) {
	tests := []struct {
		name    string
		key     map[string]string
		body    []*dto.LabelPair
		want    string // the labels, when no error is wanted
		wantErr string
	}{
		{"grouping labels overwrite body labels", map[string]string{"job": "j"}, pairs("job", "other", "a", "1"), "a=1,instance=,job=j", ""},
		{"instance is empty when neither key nor body has one", map[string]string{"job": "j"}, nil, "instance=,job=j", ""},
		{"the body's instance is kept when the key has none", map[string]string{"job": "j"}, pairs("instance", "i"), "instance=i,job=j", ""},
		{"the key's instance wins over the body's", map[string]string{"job": "j", "instance": "k"}, pairs("instance", "i"), "instance=k,job=j", ""},
		{"labels come out sorted by name", map[string]string{"job": "j", "b": "2"}, pairs("z", "9", "a", "1"), "a=1,b=2,instance=,job=j,z=9", ""},
		{"a body label named twice is refused", map[string]string{"job": "j"}, pairs("a", "1", "a", "2"), "", `metric "m": duplicate label name "a"`},
		{"a reserved __ name is refused", map[string]string{"job": "j"}, pairs("__x", "1"), "", `metric "m": invalid label name "__x"`},
		{"a value that is not UTF-8 is refused", map[string]string{"job": "j"}, pairs("a", "\xff"), "", "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLabeler(groupkey.New(tt.key), false, limits.Limits{})
			got, err := l.labels(make([]*dto.LabelPair, 0, len(tt.body)+l.extra()), "m", tt.body)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Labels = %s, %v; want an error containing %q", render(got), err, tt.wantErr)
				}
				return
			}
			if err != nil || render(got) != tt.want {
				t.Fatalf("Labels = %s, %v; want %s", render(got), err, tt.want)
			}
		})
	}
}

func TestLabelerRefusesLabelsOverTheLimits(t *testing.T) {
	l := newLabeler(groupkey.New(map[string]string{"job": "j"}), false, limits.Limits{MaxLabelsPerSeries: 2})
	_, err := l.labels(nil, "m", pairs("a", "1", "b", "2", "c", "3", "d", "4"))
	var e *Error
	if err == nil || !errors.As(err, &e) || e.Class != OverLimit || e.Reason != ReasonTooManyLabels {
		t.Fatalf("labels with 4 body labels under a limit of 2 = %v, want an OverLimit *Error for too many labels", err)
	}
}
