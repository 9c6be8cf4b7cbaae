// Package groupkey holds the identity of a metric group: its grouping labels,
// their canonical ID (written by New, read back by ParseID), its grouping
// path in a push URL (read by ParsePath, written by Key.Path), the label set
// rendering used in logs and error messages, and its labels as label pairs
// (LabelPairs). Whether a key may be pushed to is package admission's
// matter.
package groupkey

import (
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/pushgate/pushgate/exposition"
)

// Label is one name/value pair of a grouping key or a series.
type Label struct {
	Name, Value string
}

// Key identifies a metric group: the job label plus any further grouping
// labels from the push URL. Two keys are equal when their label sets are equal;
// {job="a"} and {job="a",instance=""} are different keys, as in the reference.
type Key struct {
	id     string
	labels []Label
}

// keySeparator separates names and values in a key's canonical ID. 0xFF never
// occurs in valid UTF-8, so the encoding is unambiguous (and matches the
// reference Pushgateway's persistence map keys).
const keySeparator = "\xff"

// New returns the key for the given grouping labels. The map is not
// retained.
func New(labels map[string]string) Key {
	ls := make([]Label, 0, len(labels))
	for n, v := range labels {
		ls = append(ls, Label{Name: n, Value: v})
	}
	slices.SortFunc(ls, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	return Key{id: formatID(ls), labels: ls}
}

// ID returns the canonical encoding of the key (formatID); ParseID reverses
// it.
func (k Key) ID() string { return k.id }

// formatID writes the canonical ID of labels sorted by name: name, 0xFF,
// value, 0xFF, … with no trailing separator.
func formatID(labels []Label) string {
	var b strings.Builder
	for i, l := range labels {
		if i > 0 {
			b.WriteString(keySeparator)
		}
		b.WriteString(l.Name)
		b.WriteString(keySeparator)
		b.WriteString(l.Value)
	}
	return b.String()
}

// ParseID returns the key whose ID is id: ParseID(k.ID()) is k for every
// key k. An id that does not split at 0xFF into name/value pairs (the empty
// string included) is an error. Pairs need not be sorted, and of a repeated
// name the last value counts.
func ParseID(id string) (Key, error) {
	parts := strings.Split(id, keySeparator)
	if len(parts)%2 != 0 {
		return Key{}, errors.New("not a list of label pairs")
	}
	labels := make(map[string]string, len(parts)/2)
	for i := 0; i < len(parts); i += 2 {
		labels[parts[i]] = parts[i+1]
	}
	return New(labels), nil
}

// Labels returns the grouping labels sorted by name. The slice must not be
// modified.
func (k Key) Labels() []Label { return k.labels }

// Get returns the value of the named grouping label and whether it is present.
func (k Key) Get(name string) (string, bool) {
	for _, l := range k.labels {
		if l.Name == name {
			return l.Value, true
		}
	}
	return "", false
}

// Job returns the job label.
func (k Key) Job() string {
	v, _ := k.Get("job")
	return v
}

// Map returns the grouping labels as a new map.
func (k Key) Map() map[string]string {
	m := make(map[string]string, len(k.labels))
	for _, l := range k.labels {
		m[l.Name] = l.Value
	}
	return m
}

// String renders the key like a label set, {instance="x",job="a"}, for logs
// and error messages. A name that is not a legacy label name is quoted, as
// Prometheus 3 writes it, so that the result stays on one line.
func (k Key) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range k.labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(exposition.QuoteLabelName(l.Name))
		b.WriteByte('=')
		b.WriteString(strconv.Quote(l.Value))
	}
	b.WriteByte('}')
	return b.String()
}

// LogValue renders the key as String does, for log/slog: a key passed to a
// logger is rendered only when the record is written, so a debug line on
// the push path costs nothing while debug logging is off.
func (k Key) LogValue() slog.Value { return slog.StringValue(k.String()) }
