package render

import (
	"fmt"

	"github.com/klauspost/compress/s2"
	dto "github.com/prometheus/client_model/go"

	"github.com/pushgate/pushgate/exposition"
)

// Source is what rendering reads of a stored family besides its cache:
// store.Family is one. The cache's methods that render or decompress take
// the family they belong to as a Source.
type Source interface {
	// Name, Help, Unit and Type return the family's name, HELP text,
	// unit and type.
	Name() string
	Help() string
	Unit() string
	Type() dto.MetricType
	// Cache returns the family's render cache.
	Cache() *Cache
}

// ProtobufCached returns the family's protobuf bytes as an earlier
// protobuf scrape cached them (Protobuf), and whether there are any.
// The bytes must not be modified.
func (c *Cache) ProtobufCached() ([]byte, bool) {
	if b := c.unpacked.Load(); b != nil {
		return *b, true
	}
	return nil, false
}

// Metrics returns the protobuf bytes of the metrics of src, the family c
// belongs to: the cached ones or a new decompressed copy. The result must
// not be modified.
func (c *Cache) Metrics(src Source) ([]byte, error) {
	if b := c.unpacked.Load(); b != nil {
		return *b, nil
	}
	b, err := c.AppendMetrics(nil)
	if err != nil {
		return nil, fmt.Errorf("stored family %q: %w", src.Name(), err)
	}
	return b, nil
}

// ProtobufLen returns the length of the protobuf bytes of src (the family
// c belongs to), read from the s2 block's header without decompressing it.
// A family kept as a skeleton and a value area (Stored) is put together
// and kept first (Protobuf): its counts may not take the skeleton's bytes.
func (c *Cache) ProtobufLen(src Source) (int, error) {
	if b := c.unpacked.Load(); b != nil {
		return len(*b), nil
	}
	pb, area := c.Stored()
	if len(area) > 0 {
		b, err := c.Protobuf(src)
		return len(b), err
	}
	n, err := s2.DecodedLen(pb)
	if err != nil {
		return 0, fmt.Errorf("decompress stored family %q: %w", src.Name(), err)
	}
	return n, nil
}

// Protobuf returns the protobuf bytes of src (the family c belongs to) for
// a protobuf scrape and keeps them for the next one, until DropProtobuf.
// The bytes must not be modified.
func (c *Cache) Protobuf(src Source) ([]byte, error) {
	if b := c.unpacked.Load(); b != nil {
		return *b, nil
	}
	b, err := c.Metrics(src)
	if err != nil {
		return nil, err
	}
	c.unpacked.Store(&b)
	return b, nil
}

// DropProtobuf forgets the protobuf bytes Protobuf kept, so that a gateway
// no longer scraped by protobuf holds only the compressed ones, and returns
// how many bytes it forgot.
func (c *Cache) DropProtobuf() int {
	if b := c.unpacked.Load(); b != nil {
		c.unpacked.Store(nil)
		return len(*b)
	}
	return 0
}

// Body returns the body of src in fm, rendered from its protobuf bytes:
// the way to a body no cache holds (a family that is not plain, whose body
// depends on the scrape's escaping scheme).
func Body(src Source, fm exposition.Format) ([]byte, error) {
	var sc Scratch
	return src.Cache().appendStored(nil, src, fm, &sc)
}

// appendStored appends the body of src (the family c belongs to) in fm to
// dst, rendered from its protobuf bytes: those a protobuf scrape cached, or
// its s2 block decompressed into sc (AppendMetrics).
func (c *Cache) appendStored(dst []byte, src Source, fm exposition.Format, sc *Scratch) ([]byte, error) {
	metrics, ok := c.ProtobufCached()
	if !ok {
		var err error
		if sc.metrics, err = c.AppendMetrics(sc.metrics[:0]); err != nil {
			return dst, fmt.Errorf("stored family %q: %w", src.Name(), err)
		}
		metrics = sc.metrics
	}
	dst, err := exposition.AppendStoredBody(dst, exposition.StoredFamily{
		Name: src.Name(), Help: src.Help(), Unit: src.Unit(), Type: src.Type(), Metrics: metrics,
	}, fm)
	if err != nil {
		return dst, fmt.Errorf("render family %q: %w", src.Name(), err)
	}
	return dst, nil
}
