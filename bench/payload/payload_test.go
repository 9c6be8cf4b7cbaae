package payload

import (
	"bytes"
	"math"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func TestTextParsesWithTheDeclaredShape(t *testing.T) {
	body := Text(3, 7)
	fams, err := parseText(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse text payload: %v", err)
	}
	if len(fams) != 8 || FamilyCount() != 8 {
		t.Fatalf("got %d families (FamilyCount %d), want 8", len(fams), FamilyCount())
	}
	if got := countSamples(fams); got != 74 || SampleCount() != 74 {
		t.Fatalf("got %d samples (SampleCount %d), want 74", got, SampleCount())
	}
	types := map[dto.MetricType]int{}
	for _, mf := range fams {
		types[mf.GetType()]++
		if mf.GetHelp() == "" {
			t.Errorf("family %s has no HELP", mf.GetName())
		}
	}
	want := map[dto.MetricType]int{dto.MetricType_COUNTER: 3, dto.MetricType_GAUGE: 3, dto.MetricType_HISTOGRAM: 1, dto.MetricType_SUMMARY: 1}
	for typ, n := range want {
		if types[typ] != n {
			t.Errorf("got %d families of type %s, want %d", types[typ], typ, n)
		}
	}
	if n := len(body); n < 6500 || n > 7300 {
		t.Errorf("text payload is %d bytes, want about 6.9 KB", n)
	}
}

func TestValuesVaryPerPushAndRepeatPerSeed(t *testing.T) {
	if bytes.Equal(Text(1, 1), Text(1, 2)) {
		t.Error("two pushes of one group have identical values")
	}
	if bytes.Equal(Text(1, 1), Text(2, 1)) {
		t.Error("two groups' pushes have identical values")
	}
	if !bytes.Equal(Text(5, 9), Text(5, 9)) {
		t.Error("the same group and sequence rendered different bytes")
	}
}

func TestProtobufHoldsTheSameSamplesAsText(t *testing.T) {
	body, err := Protobuf(3, 7)
	if err != nil {
		t.Fatal(err)
	}
	dec := expfmt.NewDecoder(bytes.NewReader(body), expfmt.NewFormat(expfmt.TypeProtoDelim))
	fams := map[string]*dto.MetricFamily{}
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err != nil {
			break
		}
		fams[mf.GetName()] = mf
	}
	text, err := parseText(bytes.NewReader(Text(3, 7)))
	if err != nil {
		t.Fatal(err)
	}
	if len(fams) != len(text) {
		t.Fatalf("protobuf has %d families, text %d", len(fams), len(text))
	}
	for name, mf := range text {
		var a, b bytes.Buffer
		enc := expfmt.NewEncoder(&a, expfmt.NewFormat(expfmt.TypeTextPlain))
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
		pf, ok := fams[name]
		if !ok {
			t.Fatalf("protobuf lacks family %s", name)
		}
		enc = expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
		if err := enc.Encode(pf); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Errorf("family %s differs:\ntext:\n%s\nprotobuf:\n%s", name, a.String(), b.String())
		}
	}
}

func TestExpositionParsesAndHoldsEveryGroup(t *testing.T) {
	body := Exposition(20)
	fams, err := parseText(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse exposition: %v", err)
	}
	if got, want := countSamples(fams), 20*(SampleCount()+2); got != want {
		t.Errorf("got %d samples, want %d", got, want)
	}
}

func countSamples(fams map[string]*dto.MetricFamily) int {
	n := 0
	for _, mf := range fams {
		for _, m := range mf.GetMetric() {
			switch {
			case m.Histogram != nil:
				bs := m.Histogram.GetBucket()
				n += len(bs) + 2
				if len(bs) == 0 || !math.IsInf(bs[len(bs)-1].GetUpperBound(), 1) {
					n++ // the +Inf bucket is implicit in protobuf
				}
			case m.Summary != nil:
				n += len(m.Summary.GetQuantile()) + 2
			default:
				n++
			}
		}
	}
	return n
}

func BenchmarkAppendText(b *testing.B) {
	buf := make([]byte, 0, 8<<10)
	for i := 0; b.Loop(); i++ {
		buf = AppendText(buf[:0], i%1000, i)
	}
	b.SetBytes(int64(len(buf)))
}

func parseText(r *bytes.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	return p.TextToMetricFamilies(r)
}
