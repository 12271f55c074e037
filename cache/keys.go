package cache

import (
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

// lockKey is the lock of a namespaced key: the namespace stays in front
// ("ns:product:v1:{42}" → "ns:lock:product:v1:{42}"), so every key of one
// app starts with its namespace.
func (c *Cache) lockKey(key string) string {
	ns := c.cfg.Namespace
	return ns + lockKey(strings.TrimPrefix(key, ns))
}

// LockPattern is the SCAN pattern matching every lock this cache takes (and
// only its namespace's), so an operator's listing of held locks does not
// re-encode the key scheme lockKey owns.
func (c *Cache) LockPattern() string { return c.cfg.Namespace + "lock:*" }

// named puts a caller's key in this cache's namespace; every exported
// method that takes a key calls it first, so everything below sees one name.
func (c *Cache) named(key string) string { return c.cfg.Namespace + key }

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

// baseKey undoes copyKey ("p:{42#1}" → "p:{42}"), so a change to any copy
// drops the one L1 entry they share. ok is false for a key that copyKey
// does not make.
func baseKey(key string) (base string, ok bool) {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open:], '}'); end > 1 {
			end += open
			tag, ok := trimCopyNumber(key[open+1 : end])
			if !ok || tag == "" { // copyKey keeps a tag non-empty
				return "", false
			}
			return key[:open+1] + tag + key[end:], true
		}
	}
	return trimCopyNumber(key)
}

// trimCopyNumber removes a trailing "#n", n ≥ 1 written as strconv.Itoa
// writes it.
func trimCopyNumber(s string) (string, bool) {
	i := strings.LastIndexByte(s, '#')
	if i < 0 || i == len(s)-1 || s[i+1] == '0' {
		return "", false
	}
	for _, r := range s[i+1:] {
		if r < '0' || r > '9' {
			return "", false
		}
	}
	return s[:i], true
}
