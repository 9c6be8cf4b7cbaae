package admission

import (
	"errors"
	"strings"
	"testing"

	"github.com/pushgate/pushgate/groupkey"
	"github.com/pushgate/pushgate/limits"
)

func TestGroupingLabelsRefuseAKeyNoPushPathCouldName(t *testing.T) {
	lim := limits.Limits{MaxLabelValueLength: 8}
	tests := []struct {
		name      string
		key       map[string]string
		utf8Names bool
		class     Class
		want      string // in the message; "" for a key that passes
	}{
		{"a plain key passes", map[string]string{"job": "j", "instance": "i"}, false, 0, ""},
		{"a UTF-8 name passes under the UTF-8 rules", map[string]string{"job": "j", "service.name": "s"}, true, 0, ""},
		{"a key without a job is refused", map[string]string{"instance": "i"}, false, Refused, "job name is required"},
		{"a reserved name is refused", map[string]string{"job": "j", "__x": "1"}, false, Refused, `improper label name "__x"`},
		{"a UTF-8 name is refused under the legacy rules", map[string]string{"job": "j", "service.name": "s"}, false, Refused, `improper label name "service.name"`},
		{"a value that is not UTF-8 is refused", map[string]string{"job": "j", "a": "\xff"}, false, Refused, "not valid UTF-8"},
		{"a name escaped into a reserved one is refused", map[string]string{"job": "j", "_.x": "1"}, true, Refused, "_.x"},
		{"a value over the limit is refused as too large", map[string]string{"job": "j", "a": "123456789"}, false, OverLimit, "--push.max-label-value-length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := GroupingLabels(groupkey.New(tt.key), tt.utf8Names, lim)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("GroupingLabels = %v, want nil", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Class != tt.class || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("GroupingLabels = %v, want a class %d refusal naming %q", err, tt.class, tt.want)
			}
		})
	}
}
