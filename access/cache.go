package access

import (
	"crypto/sha256"
	"encoding/binary"
	"sync"

	"golang.org/x/crypto/bcrypt"
)

// defaultCacheEntries bounds the verification cache. Only successful checks
// are cached, so the cache holds at most one entry per credential and secret
// in use; the bound only matters across many reloads that rotate secrets.
const defaultCacheEntries = 1024

// verifiedCache remembers secrets that passed their bcrypt check. A bcrypt
// check at cost 10 took 138 ms per op on the shared 2-core build machine
// (BenchmarkVerifyUncached; 59 ms unloaded); a cached check is a SHA-256 and
// a map lookup, 0.48 µs (BenchmarkVerifyCached), ~290,000× less, so clients
// pushing often do not cost a core.
//
// An entry's key is a SHA-256 of the credential's name, its bcrypt hash and
// the secret: the cache never holds a secret, and a reload that changes a
// credential's hash invalidates that credential's entries without clearing
// the others. Failed checks are never cached. The lookup's timing depends on
// the digest only, which says nothing about how close a guess was; the bcrypt
// comparison itself runs in constant time.
type verifiedCache struct {
	max     int
	mu      sync.Mutex
	entries map[[sha256.Size]byte]struct{}
}

// newVerifiedCache returns a cache of at most max entries.
func newVerifiedCache(max int) *verifiedCache {
	return &verifiedCache{max: max, entries: make(map[[sha256.Size]byte]struct{})}
}

// verify reports whether secret matches the bcrypt hash of the credential
// called name, consulting and filling the cache.
func (c *verifiedCache) verify(name string, hash []byte, secret string) bool {
	key := cacheKey(name, hash, secret)
	c.mu.Lock()
	_, ok := c.entries[key]
	c.mu.Unlock()
	if ok {
		return true
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(secret)) != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		// Evict an arbitrary entry: at worst its owner pays one more bcrypt.
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[key] = struct{}{}
	return true
}

// cacheKey hashes the length-prefixed name, hash and secret, so that no two
// different triples share an input.
func cacheKey(name string, hash []byte, secret string) [sha256.Size]byte {
	d := sha256.New()
	var n [8]byte
	for _, part := range [][]byte{[]byte(name), hash, []byte(secret)} {
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		d.Write(n[:])
		d.Write(part)
	}
	var out [sha256.Size]byte
	d.Sum(out[:0])
	return out
}
