package cache

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// lockKey is the lock guarding key. It keeps key's hash tag, so the lock and
// the entry live in one Redis Cluster slot and one Lua script may touch both.
func lockKey(key string) string { return "lock:" + key }

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
