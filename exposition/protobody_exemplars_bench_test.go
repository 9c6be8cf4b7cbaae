package exposition

import (
	"testing"

	"github.com/pushgate/pushgate/bench/payload"
)

// BenchmarkLegacyExemplarNamesInBody measures reading the exemplar label
// names of every family of the bench payload from its protobuf body, as a
// store rebuilding a group from its record does.
func BenchmarkLegacyExemplarNamesInBody(b *testing.B) {
	var bodies [][]byte
	for _, mf := range payload.Families(7, 1) {
		body, err := AppendBody(nil, mf, NewFormat(EncodingProtobuf))
		if err != nil {
			b.Fatal(err)
		}
		bodies = append(bodies, body)
	}
	for b.Loop() {
		for _, body := range bodies {
			if !LegacyExemplarNamesInBody(body) {
				b.Fatal("the bench payload's exemplar names are legacy ones")
			}
		}
	}
}
