package groupcodec

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

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

func TestARecordDecodesToTheGroupEncoded(t *testing.T) {
	want := sample()
	got, err := Decode(Encode(&want))
	if err != nil {
		t.Fatal(err)
	}
	// An empty byte string decodes as an empty slice of the record.
	if len(got.Families[1].Metrics) != 0 {
		t.Fatalf("metrics of b = %v, want none", got.Families[1].Metrics)
	}
	got.Families[1].Metrics = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded %+v\nwant %+v", got, want)
	}
}

func TestARecordIsTheDocumentedLayout(t *testing.T) {
	g := Group{
		Labels:      []Label{{"job", "j"}},
		PushTime:    time.Unix(0, 5),
		FailureTime: time.Time{},
		Families:    []Family{{Name: "m", Type: dto.MetricType_GAUGE, LastPush: time.Unix(0, 2), Metrics: []byte{0xAA}}},
	}
	want := []byte{
		2,  // version
		10, // push time 5, zigzag varint
		0,  // failure time: never
		1,  // one label
		3, 'j', 'o', 'b', 1, 'j',
		1,      // one family
		1, 'm', // name
		0,       // help
		1,       // type GAUGE
		0,       // unit
		4,       // last push 2, zigzag varint
		1, 0xAA, // metrics
		0, // failure reason
	}
	if got := Encode(&g); !bytes.Equal(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}
}

func TestAVersion1RecordDecodesWithoutAReason(t *testing.T) {
	g := sample()
	g.FailureReason = ""
	v2 := Encode(&g)
	// Version 1 is version 2 without the trailing (here empty) reason.
	v1 := append([]byte{1}, v2[1:len(v2)-1]...)
	got, err := Decode(v1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Families) != 2 || got.Families[0].Name != "a_total" || got.FailureReason != "" || !got.PushTime.Equal(g.PushTime) {
		t.Errorf("version 1 record decoded as %+v", got)
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
	if _, err := Decode(b); err == nil || !strings.Contains(err.Error(), "version 3") {
		t.Errorf("err = %v, want an unknown version 3", err)
	}
}
