package etcdlog

import (
	"bytes"
	"testing"

	"github.com/klauspost/compress/s2"

	"github.com/pushgate/pushgate/groupcodec"
)

func TestAValueIsStoredCompressedOnceAndReadBack(t *testing.T) {
	v3 := groupcodec.Encode(&groupcodec.Group{
		Labels:   []groupcodec.Label{{Name: "job", Value: "a"}},
		Families: []groupcodec.Family{{Name: "m", Metrics: bytes.Repeat([]byte{0x22, 0x02, 0x1a, 0x00}, 100)}},
	})
	v2 := append([]byte{2}, bytes.Repeat([]byte{0}, 400)...)
	for _, tc := range []struct {
		name   string
		value  []byte
		asIsIn bool // stored as it is, not compressed again
	}{
		{"a version 3 record is stored as it is", v3, true},
		{"a version 2 record is stored compressed", v2, false},
		{"a 3-byte value, whose s2 block starts with byte 3, is stored compressed", []byte("abc"), false},
		{"any other value is stored compressed", []byte("x"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := stored(tc.value)
			if asIs := bytes.Equal(st, tc.value); asIs != tc.asIsIn {
				t.Errorf("stored as it is: %v, want %v", asIs, tc.asIsIn)
			}
			if len(st) > storedBound(tc.value) {
				t.Errorf("stored %d bytes, over the bound %d", len(st), storedBound(tc.value))
			}
			back, err := unstored(st)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back, tc.value) {
				t.Errorf("read back %v, want %v", back, tc.value)
			}
		})
	}
}

func TestAValueAnEarlierVersionStoredIsReadBack(t *testing.T) {
	// Before version 3 records, every value was stored as its s2 block.
	v2 := append([]byte{2}, bytes.Repeat([]byte{7}, 300)...)
	back, err := unstored(s2.Encode(nil, v2))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, v2) {
		t.Errorf("read back %v, want %v", back, v2)
	}
}
