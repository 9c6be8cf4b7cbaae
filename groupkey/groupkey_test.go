package groupkey

import "testing"

func TestParseIDReversesID(t *testing.T) {
	for _, labels := range []map[string]string{
		{"job": "a"},
		{"job": "a", "instance": ""},
		{"job": "", "x": "ü?=&/", "empty": ""},
		{"job": "a", "a.b": "c\nd"},
	} {
		k := New(labels)
		got, err := ParseID(k.ID())
		if err != nil {
			t.Fatalf("ParseID(%q): %v", k.ID(), err)
		}
		if got.ID() != k.ID() || got.String() != k.String() {
			t.Errorf("ParseID(%q) = %s, want %s", k.ID(), got, k)
		}
	}
}

func TestParseID(t *testing.T) {
	tests := []struct {
		name    string
		id      string
		want    string // the key's String, when no error is wanted
		wantErr bool
	}{
		{"an empty ID is not a key", "", "", true},
		{"a name without a value is not a key", "job", "", true},
		{"an odd number of parts is not a key", "job\xffa\xffinstance", "", true},
		{"pairs out of order give the canonical key", "job\xffa\xffinstance\xffi", `{instance="i",job="a"}`, false},
		{"of a repeated name the last value counts", "job\xffa\xffjob\xffb", `{job="b"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseID(tt.id)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseID(%q) = %s, want an error", tt.id, got)
				}
				return
			}
			if err != nil || got.String() != tt.want {
				t.Fatalf("ParseID(%q) = %s, %v; want %s", tt.id, got, err, tt.want)
			}
		})
	}
}
