package groupcodec

import (
	"bytes"
	"reflect"
	"testing"
)

func TestAFamilyStateMakesAVersion4RecordThatDecodesBack(t *testing.T) {
	want := sample()
	want.Families[1].State = []byte{1, 2, 3, 0}
	b := Encode(&want)
	if b[0] != 4 {
		t.Fatalf("version %d, want 4", b[0])
	}
	if !Compressed(b) {
		t.Error("a version 4 record is not Compressed")
	}
	got, err := Decode(b)
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
	// The state is a copy: the record's memory may be reused.
	b[len(b)-1] ^= 0xff
	clear(b)
	if !bytes.Equal(got.Families[1].State, []byte{1, 2, 3, 0}) {
		t.Errorf("state changed with the record: %v", got.Families[1].State)
	}
}

func TestAGroupWithoutStatesIsStillWrittenAsVersion3(t *testing.T) {
	g := sample()
	if b := Encode(&g); b[0] != 3 {
		t.Errorf("version %d, want 3: a version 3 reader must take it", b[0])
	}
	g.Families[0].State = []byte{}
	if b := Encode(&g); b[0] != 3 {
		t.Errorf("an empty state: version %d, want 3", b[0])
	}
}

func TestEveryTruncatedVersion4RecordIsAnError(t *testing.T) {
	g := sample()
	g.Families[0].State = []byte("state")
	b := Encode(&g)
	for n := range len(b) {
		if _, err := Decode(b[:n]); err == nil {
			t.Fatalf("Decode of the first %d of %d bytes succeeded", n, len(b))
		}
	}
}
