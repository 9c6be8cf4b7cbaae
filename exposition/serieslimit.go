package exposition

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrTooManySeries is wrapped by the error Decode returns for a push holding
// more series than DecodeOptions.MaxSeries.
var ErrTooManySeries = errors.New("too many series")

// seriesLimitError reports a push over the series limit. Its message names
// the limit; errors.Is matches it with ErrTooManySeries.
type seriesLimitError struct{ max int }

// Error implements error.
func (e *seriesLimitError) Error() string {
	return fmt.Sprintf("push has more than %d series", e.max)
}

// Is makes errors.Is(err, ErrTooManySeries) true.
func (e *seriesLimitError) Is(target error) bool { return target == ErrTooManySeries }

// countFamilySeries adds the metrics of one family to the series count n
// and fails once the count is over max (when max > 0).
func countFamilySeries(n int, metrics int, max int) (int, error) {
	n += metrics
	if max > 0 && n > max {
		return n, &seriesLimitError{max: max}
	}
	return n, nil
}

// metricFieldNumber is the number of MetricFamily's repeated metric field.
const metricFieldNumber protowire.Number = 4

// countProtobufMetrics counts the metric fields of one encoded MetricFamily
// without decoding it, so that an oversized push is refused before its
// metrics are built. A malformed message returns 0: Unmarshal reports it.
func countProtobufMetrics(msg []byte) int {
	n := 0
	for len(msg) > 0 {
		num, typ, tagLen := protowire.ConsumeTag(msg)
		if tagLen < 0 {
			return n
		}
		valLen := protowire.ConsumeFieldValue(num, typ, msg[tagLen:])
		if valLen < 0 {
			return n
		}
		if num == metricFieldNumber && typ == protowire.BytesType {
			n++
		}
		msg = msg[tagLen+valLen:]
	}
	return n
}
