// Package gobfile reads and writes the persistence file of the reference
// Prometheus Pushgateway (--persistence.file), so that pushgate can import
// it on first start and export back to it.
//
// The file is one encoding/gob value: a map from canonical grouping key to
// group, each group holding Labels and Metrics (family name → Timestamp and
// GobbableMetricFamily, the latter gob-encoded as the protobuf wire bytes of
// an io.prometheus.client.MetricFamily). Gob matches struct fields by name,
// so the unexported types below, whose field names match the reference's,
// decode real files; the type names in the stream do not matter.
package gobfile

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// Group is one grouping key's state in a reference persistence file.
type Group struct {
	// Labels are the grouping labels, job included.
	Labels map[string]string
	// Families are the group's metric families, sorted by name by Read,
	// including the synthetic push_time_seconds and
	// push_failure_time_seconds families the reference stores like any
	// other.
	Families []Family
}

// Family is one metric family with the time it was last pushed.
type Family struct {
	// LastPush is when the family was last pushed.
	LastPush time.Time
	// Family is the family as pushed.
	Family *dto.MetricFamily
}

// The gob shape of the file. Field names are the contract; see the package
// comment.
type (
	groupingKeyToMetricGroup         map[string]metricGroup
	nameToTimestampedMetricFamilyMap map[string]timestampedMetricFamily

	metricGroup struct {
		Labels  map[string]string
		Metrics nameToTimestampedMetricFamilyMap
	}

	timestampedMetricFamily struct {
		Timestamp            time.Time
		GobbableMetricFamily *gobbableMetricFamily
	}

	// gobbableMetricFamily travels as protobuf bytes inside gob.
	gobbableMetricFamily dto.MetricFamily
)

// GobEncode returns the protobuf wire bytes of the family.
func (m *gobbableMetricFamily) GobEncode() ([]byte, error) {
	return proto.Marshal((*dto.MetricFamily)(m))
}

// GobDecode parses the protobuf wire bytes of a family.
func (m *gobbableMetricFamily) GobDecode(b []byte) error {
	return proto.Unmarshal(b, (*dto.MetricFamily)(m))
}

// Read decodes a reference Pushgateway persistence file. It returns the
// groups sorted by their canonical grouping key, and each group's families
// sorted by name, so the result is deterministic.
func Read(r io.Reader) ([]Group, error) {
	var m groupingKeyToMetricGroup
	if err := gob.NewDecoder(r).Decode(&m); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // an empty file is not an empty store
		}
		return nil, fmt.Errorf("gobfile: decode reference Pushgateway persistence file: %w", err)
	}
	keys := make([]string, 0, len(m))
	byKey := make(map[string]metricGroup, len(m))
	for fileKey, mg := range m {
		key := canonicalKey(mg.Labels)
		if _, dup := byKey[key]; dup {
			return nil, fmt.Errorf("gobfile: groups %q and another have the same labels %v", fileKey, mg.Labels)
		}
		byKey[key] = mg
		keys = append(keys, key)
	}
	slices.Sort(keys)
	groups := make([]Group, 0, len(keys))
	for _, key := range keys {
		mg := byKey[key]
		g := Group{Labels: mg.Labels, Families: make([]Family, 0, len(mg.Metrics))}
		if g.Labels == nil {
			g.Labels = map[string]string{}
		}
		names := make([]string, 0, len(mg.Metrics))
		for name := range mg.Metrics {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			tf := mg.Metrics[name]
			if tf.GobbableMetricFamily == nil {
				return nil, fmt.Errorf("gobfile: group %v: family %q has no data", mg.Labels, name)
			}
			g.Families = append(g.Families, Family{LastPush: tf.Timestamp, Family: (*dto.MetricFamily)(tf.GobbableMetricFamily)})
		}
		groups = append(groups, g)
	}
	return groups, nil
}

// Write encodes groups in the reference format, keyed by canonical grouping
// key, for tests and for exporting back to the reference Pushgateway.
func Write(w io.Writer, groups []Group) error {
	m := make(groupingKeyToMetricGroup, len(groups))
	for _, g := range groups {
		key := canonicalKey(g.Labels)
		if _, dup := m[key]; dup {
			return fmt.Errorf("gobfile: two groups have the labels %v", g.Labels)
		}
		mg := metricGroup{Labels: g.Labels, Metrics: make(nameToTimestampedMetricFamilyMap, len(g.Families))}
		for _, f := range g.Families {
			if f.Family == nil {
				return fmt.Errorf("gobfile: group %v has a nil family", g.Labels)
			}
			name := f.Family.GetName()
			if _, dup := mg.Metrics[name]; dup {
				return fmt.Errorf("gobfile: group %v has two families named %q", g.Labels, name)
			}
			mg.Metrics[name] = timestampedMetricFamily{Timestamp: f.LastPush, GobbableMetricFamily: (*gobbableMetricFamily)(f.Family)}
		}
		m[key] = mg
	}
	if err := gob.NewEncoder(w).Encode(m); err != nil {
		return fmt.Errorf("gobfile: encode reference Pushgateway persistence file: %w", err)
	}
	return nil
}

// canonicalKey is the reference's grouping key string: label names sorted,
// then name, 0xFF, value, 0xFF, … with no trailing separator.
func canonicalKey(labels map[string]string) string {
	names := make([]string, 0, len(labels))
	for n := range labels {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(0xFF)
		}
		b.WriteString(n)
		b.WriteByte(0xFF)
		b.WriteString(labels[n])
	}
	return b.String()
}

// SniffLen is how many leading bytes of a file Sniff wants (fewer if the file
// is shorter).
const SniffLen = 512

// Sniff reports whether head, the first bytes of a file (SniffLen of them,
// or the whole file if shorter), look like a gob stream of the reference
// persistence format rather than a pushgate journal: gob framing whose first
// message defines a type, with the field names Labels and Metrics among the
// type descriptors. A pushgate journal starts with 0x89, which no gob stream
// can.
func Sniff(head []byte) bool {
	n, rest, ok := gobUint(head)
	if !ok || n == 0 || n > 1<<20 {
		return false
	}
	id, _, ok := gobUint(rest)
	// A first message defines a type: its id is a negative int, which gob
	// writes as (^id<<1)|1, and user-defined type ids start at 65.
	if !ok || id&1 == 0 || id>>1 < 64 {
		return false
	}
	return bytes.Contains(head, []byte("Labels")) && bytes.Contains(head, []byte("Metrics"))
}

// gobUint decodes one gob unsigned integer: a byte below 0x80 is the value;
// otherwise the byte is the negated count of big-endian bytes that follow.
func gobUint(b []byte) (uint64, []byte, bool) {
	if len(b) == 0 {
		return 0, nil, false
	}
	if b[0] < 0x80 {
		return uint64(b[0]), b[1:], true
	}
	n := int(-int8(b[0]))
	if n > 8 || len(b) < 1+n {
		return 0, nil, false
	}
	var x uint64
	for _, c := range b[1 : 1+n] {
		x = x<<8 | uint64(c)
	}
	return x, b[1+n:], true
}
