package exposition

import (
	"unicode/utf8"

	"github.com/prometheus/common/model"
)

// ValidMetricName reports whether name is a valid metric name. Under the
// legacy rules (utf8 false) it must match [a-zA-Z_:][a-zA-Z0-9_:]*; under the
// UTF-8 rules it must be non-empty, valid UTF-8.
func ValidMetricName(name string, utf8Names bool) bool {
	if utf8Names {
		return name != "" && utf8.ValidString(name)
	}
	return model.LegacyValidation.IsValidMetricName(name)
}

// ValidLabelName reports whether name is a valid label name. Under the legacy
// rules (utf8 false) it must match [a-zA-Z_][a-zA-Z0-9_]*; under the UTF-8
// rules it must be non-empty, valid UTF-8.
func ValidLabelName(name string, utf8Names bool) bool {
	if utf8Names {
		return name != "" && utf8.ValidString(name)
	}
	return model.LegacyValidation.IsValidLabelName(name)
}

// UnescapeLabelName decodes a label name written with the "U__"
// value-encoding escaping that clients use for UTF-8 label names in push
// URLs: the name starts with "U__", a literal '_' is written as "__", and any
// other character outside [A-Za-z0-9_] as "_<hex code point>_". Names without
// the prefix, and names holding an invalid sequence, are returned unchanged.
func UnescapeLabelName(s string) string {
	return model.UnescapeName(s, model.ValueEncodingEscaping)
}

// legacyName reports whether name is left alone by every escaping scheme:
// model.EscapeMetricFamily skips metric and label names that pass the legacy
// metric-name check.
func legacyName(name string) bool {
	return model.LegacyValidation.IsValidMetricName(name)
}
