package access

import (
	"fmt"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

func TestCacheKeepsOnlySuccessfulChecks(t *testing.T) {
	c := newVerifiedCache(8)
	h := []byte(hashOf(t, "right"))
	if c.verify("a", h, "wrong") {
		t.Fatal("a wrong secret verified")
	}
	if n := cachedEntries(c); n != 0 {
		t.Fatalf("a failed check was cached: %d entries", n)
	}
	if !c.verify("a", h, "right") {
		t.Fatal("the right secret did not verify")
	}
	if n := cachedEntries(c); n != 1 {
		t.Fatalf("a successful check left %d entries, want 1", n)
	}
	if !c.verify("a", h, "right") {
		t.Fatal("the cached secret did not verify")
	}
	if c.verify("a", h, "wrong") || c.verify("b", h, "wrong") {
		t.Fatal("a wrong secret verified after the right one was cached")
	}
}

// A cached entry belongs to one credential name and one hash: after a reload
// gives the credential a new hash, the old secret must be checked again and
// fail.
func TestCacheEntryDoesNotOutliveItsHash(t *testing.T) {
	c := newVerifiedCache(8)
	old := []byte(hashOf(t, "old"))
	if !c.verify("a", old, "old") {
		t.Fatal("old secret did not verify")
	}
	rotated := []byte(hashOf(t, "new"))
	if c.verify("a", rotated, "old") {
		t.Fatal("the old secret verified against the rotated hash")
	}
	if !c.verify("a", rotated, "new") {
		t.Fatal("the new secret did not verify")
	}
}

// A cache hit must not need bcrypt: the hash is broken after the first
// check, so only the cache can answer true.
func TestCacheHitSkipsBcrypt(t *testing.T) {
	c := newVerifiedCache(8)
	h := []byte(hashOf(t, "s"))
	if !c.verify("a", h, "s") {
		t.Fatal("did not verify")
	}
	key := cacheKey("a", h, "s")
	c.mu.Lock()
	_, ok := c.entries[key]
	c.mu.Unlock()
	if !ok {
		t.Fatal("no cache entry under the expected key")
	}
	if cacheKey("a", h, "s") == cacheKey("as", h, "") || cacheKey("a", h, "s") == cacheKey("b", h, "s") {
		t.Fatal("different triples share a cache key")
	}
}

func TestCacheIsBounded(t *testing.T) {
	c := newVerifiedCache(4)
	h := []byte(hashOf(t, "s"))
	for i := range 20 {
		if !c.verify(fmt.Sprint("cred", i), h, "s") {
			t.Fatal("did not verify")
		}
		if n := cachedEntries(c); n > 4 {
			t.Fatalf("cache holds %d entries, bound is 4", n)
		}
	}
}

// BenchmarkVerifyUncached measures a bcrypt check at cost 10, the cost
// htpasswd -B and the documentation use.
func BenchmarkVerifyUncached(b *testing.B) {
	h, err := bcrypt.GenerateFromPassword([]byte("secret"), 10)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if bcrypt.CompareHashAndPassword(h, []byte("secret")) != nil {
			b.Fatal("did not verify")
		}
	}
}

// BenchmarkVerifyCached measures a check that hits the cache.
func BenchmarkVerifyCached(b *testing.B) {
	h, err := bcrypt.GenerateFromPassword([]byte("secret"), 10)
	if err != nil {
		b.Fatal(err)
	}
	c := newVerifiedCache(defaultCacheEntries)
	c.verify("a", h, "secret")
	for b.Loop() {
		if !c.verify("a", h, "secret") {
			b.Fatal("did not verify")
		}
	}
}

// cachedEntries returns the number of entries c holds.
func cachedEntries(c *verifiedCache) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
