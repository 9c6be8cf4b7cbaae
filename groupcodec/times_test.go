package groupcodec

import (
	"testing"
	"time"
)

func TestTheZeroTimeIsHeldAsZeroAndReadBack(t *testing.T) {
	if n := UnixNanos(time.Time{}); n != 0 {
		t.Errorf("UnixNanos(zero time) = %d, want 0", n)
	}
	if got := NanosTime(0); !got.IsZero() {
		t.Errorf("NanosTime(0) = %v, want the zero time", got)
	}
	at := time.Date(2026, 11, 26, 12, 0, 0, 123456789, time.UTC)
	if got := NanosTime(UnixNanos(at)); !got.Equal(at) {
		t.Errorf("NanosTime(UnixNanos(%v)) = %v", at, got)
	}
}
