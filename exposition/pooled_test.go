package exposition

import (
	"bytes"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// pooledBodies are bodies of different shapes, decoded one after another so
// that each reuses the memory the previous one released.
var pooledBodies = []struct {
	name, contentType string
	utf8              bool
	body              string
}{
	{"a histogram with float counts", "", false, "# TYPE h histogram\nh_bucket{le=\"1\",a=\"x\"} 1.5\nh_bucket{le=\"+Inf\",a=\"x\"} 2.5\nh_count{a=\"x\"} 2.5\nh_sum{a=\"x\"} 7\n"},
	{"counters with timestamps", "", false, "# HELP c A counter.\n# TYPE c counter\nc{a=\"1\"} 1 1000\nc{a=\"2\"} 2 2000\n"},
	{"a summary", "", false, "# TYPE s summary\ns{q=\"a\",quantile=\"0.5\"} 1\ns{q=\"a\",quantile=\"0.9\"} 2\ns_sum{q=\"a\"} 3\ns_count{q=\"a\"} 4\n"},
	{"escaped values and help", "", false, "# HELP e Line\\none \\\\ two.\ne{v=\"a\\\"b\\\\c\\nd\"} 1\n"},
	{"untyped series without labels", "", false, "u 1\nv 2\nw 3\n"},
	{"a histogram with integer counts", "", false, "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_count 2\nh_sum 3\n"},
	{"a quoted name, left to expfmt", "", true, "{\"a.b\",x=\"y\"} 1\n"},
	{"a syntax error", "", false, "m{a=\"b\"} x\n"},
	{"an empty body", "", false, ""},
	{"the batch-job payload", "", false, ""}, // Filled in by the test.
	{"a protobuf body", protobufContentType, false, ""},
}

// TestDecodeAfterReleaseMatchesAFirstDecode decodes each body once and
// keeps the families, then decodes the bodies again and again, releasing
// each decode before the next: every later decode must give what the
// first gave, although it reuses memory another body used.
func TestDecodeAfterReleaseMatchesAFirstDecode(t *testing.T) {
	bodies := pooledBodies
	bodies[len(bodies)-2].body = string(batchJobText(t))
	bodies[len(bodies)-1].body = string(batchJobProtobuf(t))
	wants := make([][]*dto.MetricFamily, len(bodies))
	wantErrs := make([]error, len(bodies))
	for i, tt := range bodies {
		wants[i], wantErrs[i] = decodeFamilies(strings.NewReader(tt.body), tt.contentType, DecodeOptions{UTF8Names: tt.utf8})
	}
	// Three rounds, so that every body meets memory another one used.
	for round := range 3 {
		for i, tt := range bodies {
			want, wantErr := wants[i], wantErrs[i]
			got, err := Decode(strings.NewReader(tt.body), tt.contentType, DecodeOptions{UTF8Names: tt.utf8})
			if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
				t.Fatalf("round %d, %s: err = %v, want %v", round, tt.name, err, wantErr)
			}
			if err != nil {
				continue
			}
			if len(got.Families) != len(want) {
				t.Fatalf("round %d, %s: %d families, want %d", round, tt.name, len(got.Families), len(want))
			}
			for i := range want {
				if !proto.Equal(got.Families[i], want[i]) {
					t.Errorf("round %d, %s: family %d = %v, want %v", round, tt.name, i, got.Families[i], want[i])
				}
			}
			got.Release()
		}
	}
}

func TestDecodedReleaseForgetsTheFamiliesOnce(t *testing.T) {
	d, err := Decode(strings.NewReader("m 1\n"), "", DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Release()
	if d.Families != nil {
		t.Errorf("Families = %v after Release, want nil", d.Families)
	}
	d.Release() // A second release must not hand the memory back twice.
	var none *Decoded
	none.Release()
}

// TestDecodePooledReusesMemory fails if the pooled decoder stops reusing
// its memory: a released decode of the batch-job payload must allocate far
// less than one whose families are kept (under -race, sync.Pool drops a
// quarter of what it is given, so the bound is loose).
func TestDecodePooledReusesMemory(t *testing.T) {
	body := batchJobText(t)
	owned := testing.AllocsPerRun(50, func() {
		if _, err := Decode(bytes.NewReader(body), "", DecodeOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	pooled := testing.AllocsPerRun(50, func() {
		d, err := Decode(bytes.NewReader(body), "", DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Release()
	})
	if pooled > owned/2 {
		t.Errorf("Decode+Release: %.0f allocations per body, Decode alone: %.0f; want at most half", pooled, owned)
	}
	t.Logf("allocations per body: Decode alone %.0f, Decode+Release %.0f", owned, pooled)
}

func BenchmarkDecodePooledText(b *testing.B) {
	body := batchJobText(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		d, err := Decode(bytes.NewReader(body), "", DecodeOptions{MaxBytes: 1 << 20})
		if err != nil {
			b.Fatal(err)
		}
		d.Release()
	}
}
