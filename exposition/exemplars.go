package exposition

import (
	"fmt"

	dto "github.com/prometheus/client_model/go"
)

// EachExemplar calls check for every exemplar of m (a counter's, a classic
// histogram's buckets', a native histogram's) and returns the first error,
// saying which exemplar it was.
func EachExemplar(m *dto.Metric, check func(*dto.Exemplar) error) error {
	if c := m.Counter; c != nil && c.Exemplar != nil {
		if err := check(c.Exemplar); err != nil {
			return fmt.Errorf("counter exemplar: %w", err)
		}
	}
	h := m.Histogram
	if h == nil {
		return nil
	}
	for _, b := range h.Bucket {
		if b.Exemplar != nil {
			if err := check(b.Exemplar); err != nil {
				return fmt.Errorf("exemplar of bucket le=%g: %w", b.GetUpperBound(), err)
			}
		}
	}
	for _, e := range h.Exemplars {
		if e != nil {
			if err := check(e); err != nil {
				return fmt.Errorf("native histogram exemplar: %w", err)
			}
		}
	}
	return nil
}
