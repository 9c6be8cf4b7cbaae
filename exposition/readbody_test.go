package exposition

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadBodyNeverGrowsPastTheLimit(t *testing.T) {
	cases := []struct {
		name    string
		size    int
		limit   int64
		tooBig  bool
		maxCaps int
	}{
		{"a small body fits the first buffer", 100, 1 << 20, false, 16 << 10},
		{"a body of exactly the limit is accepted", 100_000, 100_000, false, 100_000},
		{"one byte past the limit is refused", 100_001, 100_000, true, 100_000},
		{"a body far past an odd limit is refused at it", 5_000_000, 123_457, true, 123_457},
		{"no limit reads everything", 300_000, 0, false, 512 << 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			r := iotest.HalfReader(strings.NewReader(strings.Repeat("x", tc.size)))
			err := readBody(&buf, r, tc.limit)
			if tc.tooBig != errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want too large: %v", err, tc.tooBig)
			}
			if !tc.tooBig && (err != nil || buf.Len() != tc.size) {
				t.Fatalf("read %d bytes, err %v; want %d", buf.Len(), err, tc.size)
			}
			if buf.Cap() > tc.maxCaps {
				t.Errorf("buffer grew to %d bytes, want at most %d", buf.Cap(), tc.maxCaps)
			}
		})
	}
}

func TestReadBodyEnforcesTheLimitInALargerReusedBuffer(t *testing.T) {
	cases := []struct {
		name   string
		size   int
		tooBig bool
	}{
		{"a body of exactly the limit is accepted", 1000, false},
		{"one byte past the limit is refused", 1001, true},
		{"a body far past the limit is refused", 50_000, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A pooled decoder's buffer keeps the capacity of an earlier,
			// larger body.
			buf := bytes.NewBuffer(make([]byte, 0, 64<<10))
			err := readBody(buf, strings.NewReader(strings.Repeat("x", tc.size)), 1000)
			if tc.tooBig != errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want too large: %v", err, tc.tooBig)
			}
			if buf.Len() > 1000 {
				t.Errorf("read %d bytes into the buffer, more than the limit", buf.Len())
			}
		})
	}
}
