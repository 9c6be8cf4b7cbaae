package groupcodec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	dto "github.com/prometheus/client_model/go"
)

// sample is a group with every field set, a second family with none of
// the optional ones, and a zero failure time.
func sample() Group {
	return Group{
		Labels:        []Label{{"instance", ""}, {"job", "batch"}},
		PushTime:      time.Unix(1_700_000_000, 123),
		FailureReason: "a one-line reason",
		Families: []Family{
			{Name: "a_total", Help: "Help.", Unit: "seconds", Type: dto.MetricType_COUNTER, LastPush: time.Unix(1_600_000_000, 0), Metrics: []byte{0x22, 0x02, 0x1a, 0x00}},
			{Name: "b", Type: dto.MetricType_GAUGE},
		},
	}
}

// packed returns the s2 block of b.
func packed(b []byte) []byte { return s2.Encode(nil, b) }

func TestARecordDecodesToTheGroupEncodedWithItsMetricsPacked(t *testing.T) {
	want := sample()
	got, err := Decode(Encode(&want))
	if err != nil {
		t.Fatal(err)
	}
	for i := range want.Families {
		f := &want.Families[i]
		f.Packed, f.Metrics = packed(f.Metrics), nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded %+v\nwant %+v", got, want)
	}
}

func TestEncodeKeepsAPackedBlockAsItIs(t *testing.T) {
	g := sample()
	// Not a block s2 would write for these metrics: Encode must not
	// recompress what it is given.
	g.Families[0].Packed = []byte{4, 0x0c, 0x22, 0x02, 0x1a, 0x00}
	got, err := Decode(Encode(&g))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Families[0].Packed, g.Families[0].Packed) {
		t.Errorf("packed = %v, want %v", got.Families[0].Packed, g.Families[0].Packed)
	}
}

func TestARecordIsTheDocumentedLayout(t *testing.T) {
	g := Group{
		Labels:      []Label{{"job", "j"}},
		PushTime:    time.Unix(0, 5),
		FailureTime: time.Time{},
		Families:    []Family{{Name: "m", Type: dto.MetricType_GAUGE, LastPush: time.Unix(0, 2), Packed: []byte{1, 0, 0xAA}}},
	}
	head := []byte{
		10, // push time 5, zigzag varint
		0,  // failure time: never
		1,  // one label
		3, 'j', 'o', 'b', 1, 'j',
		1,      // one family
		1, 'm', // name
		0, // help
		1, // type GAUGE
		0, // unit
		4, // last push 2, zigzag varint
		3, // the length of its metrics' block
		0, // failure reason
	}
	packedHead := s2.Encode(nil, head)
	want := append([]byte{3, byte(len(packedHead))}, packedHead...) // version, head
	want = append(want, 1, 0, 0xAA)                                 // the family's block
	if got := Encode(&g); !bytes.Equal(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}
}

// legacyRecord returns g as a record of version 1 or 2 holds it: the
// metrics raw, and (version 2) the reason at the end.
func legacyRecord(version byte, g *Group) []byte {
	b := []byte{version}
	b = binary.AppendVarint(b, UnixNanos(g.PushTime))
	b = binary.AppendVarint(b, UnixNanos(g.FailureTime))
	b = binary.AppendUvarint(b, uint64(len(g.Labels)))
	for _, l := range g.Labels {
		b = appendString(b, l.Name)
		b = appendString(b, l.Value)
	}
	b = binary.AppendUvarint(b, uint64(len(g.Families)))
	for _, f := range g.Families {
		b = appendString(b, f.Name)
		b = appendString(b, f.Help)
		b = binary.AppendUvarint(b, uint64(f.Type))
		b = appendString(b, f.Unit)
		b = binary.AppendVarint(b, UnixNanos(f.LastPush))
		b = appendString(b, string(f.Metrics))
	}
	if version >= 2 {
		b = appendString(b, g.FailureReason)
	}
	return b
}

func TestOlderVersionsDecodeWithTheirMetricsRaw(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version byte
		reason  string
	}{
		{"a version 1 record decodes without a reason", 1, ""},
		{"a version 2 record decodes with its reason", 2, "a one-line reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := sample()
			want.Families[1].Metrics = []byte{}
			want.FailureReason = tc.reason
			got, err := Decode(legacyRecord(tc.version, &want))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decoded %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestCompressedTellsARecordOfVersion3FromAnyS2Block(t *testing.T) {
	g := sample()
	for _, tc := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"a version 3 record is compressed", Encode(&g), true},
		{"the shortest version 3 record is compressed", Encode(&Group{}), true},
		{"the shortest version 3 record is 9 bytes", Encode(&Group{})[:minRecordLen-1], false},
		{"a version 2 record is not", legacyRecord(2, &g), false},
		{"the s2 block of a version 2 record is not", packed(legacyRecord(2, &g)), false},
		{"the s2 block of 3 bytes, which starts with byte 3, is not", packed([]byte{1, 2, 3}), false},
		{"nothing is not", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Compressed(tc.b); got != tc.want {
				t.Errorf("Compressed(%v) = %v, want %v", tc.b, got, tc.want)
			}
		})
	}
}

func TestEveryTruncatedRecordIsAnError(t *testing.T) {
	g := sample()
	b := Encode(&g)
	for n := range len(b) {
		if _, err := Decode(b[:n]); !errors.Is(err, ErrTruncated) {
			t.Fatalf("Decode of the first %d of %d bytes: err = %v, want ErrTruncated", n, len(b), err)
		}
	}
}

func TestAnUnknownVersionIsAnError(t *testing.T) {
	g := sample()
	b := Encode(&g)
	b[0] = Version + 1
	if _, err := Decode(b); err == nil || !strings.Contains(err.Error(), "version 5") {
		t.Errorf("err = %v, want an unknown version 5", err)
	}
}
