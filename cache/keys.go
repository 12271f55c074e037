package cache

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// lockKey is the lock guarding key, in the same Redis Cluster slot, so one
// Lua script may touch both: a tagged key's lock keeps its tag; an untagged
// key becomes the lock's tag ("k" → "lock:{k}", hashed as "k" like the key;
// an untagged key that contains '}' cannot, so give such keys a tag).
func lockKey(key string) string {
	if hasTag(key) {
		return "lock:" + key
	}
	return "lock:{" + key + "}"
}

// hasTag reports whether key has a non-empty {hash tag}.
func hasTag(key string) bool {
	open := strings.IndexByte(key, '{')
	return open >= 0 && strings.IndexByte(key[open:], '}') > 1
}

// copyKey names copy n (1..) of key. Copies exist to spread a hot key over
// several cluster slots, so the copy number goes inside the hash tag
// ("p:{42}" → "p:{42#1}"), giving each copy a different slot.
func copyKey(key string, n int) string {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open:], '}'); end > 1 {
			end += open
			return key[:end] + "#" + strconv.Itoa(n) + key[end:]
		}
	}
	return key + "#" + strconv.Itoa(n)
}

// readKey picks the key a read uses: a random copy, or the entry itself.
func (c *Cache) readKey(key string) string {
	if c.cfg.Copies <= 1 {
		return key
	}
	if n := rand.IntN(c.cfg.Copies); n > 0 {
		return copyKey(key, n)
	}
	return key
}
