package cache

import (
	"context"
	"errors"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// crc16 is CRC16-XMODEM (poly 0x1021, init 0), the checksum Redis Cluster
// uses for key slots. Written here so the test does not trust go-redis's.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// slot is the Redis Cluster slot of key: the hash tag (between the first
// '{' and the next '}') when non-empty, else the whole key.
func slot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return int(crc16(key) % 16384)
}

func TestSlot(t *testing.T) {
	t.Parallel()
	if got := crc16("123456789"); got != 0x31C3 {
		t.Errorf("crc16(123456789): got %#04x, want 0x31c3 (XMODEM check value)", got)
	}
	tests := []struct {
		key  string
		want int
	}{
		{"foo", 12182},                // CLUSTER KEYSLOT foo
		{"somekey", 11058},            // CLUSTER KEYSLOT somekey
		{"x{foo}y", 12182},            // the tag alone is hashed
		{"a{}b", slotOfWhole("a{}b")}, // an empty tag hashes the whole key
	}
	for _, tc := range tests {
		if got := slot(tc.key); got != tc.want {
			t.Errorf("slot(%q): got %d, want %d", tc.key, got, tc.want)
		}
	}
}

func slotOfWhole(key string) int { return int(crc16(key) % 16384) }

// TestCopyAndLockKeys: a lock shares its entry's slot (one Lua script may
// touch both), and each copy moves to a slot of its own.
func TestCopyAndLockKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key, copy1, copy2 string
		tagged            bool // has a non-empty hash tag the lock keeps
	}{
		{"p:{42}", "p:{42#1}", "p:{42#2}", true},
		{"p:{42}:v2", "p:{42#1}:v2", "p:{42#2}:v2", true},
		{"{a}{b}", "{a#1}{b}", "{a#2}{b}", true}, // only the first tag counts
		{"x}{y}", "x}{y#1}", "x}{y#2}", true},    // a '}' before the '{' is not a tag
		{"plain", "plain#1", "plain#2", false},   // no tag: the whole key is hashed
		{"a{}b", "a{}b#1", "a{}b#2", false},      // empty tag: the whole key is hashed
		{"open{", "open{#1", "open{#2", false},   // unclosed: the whole key is hashed
	}
	for _, tc := range tests {
		got1, got2 := copyKey(tc.key, 1), copyKey(tc.key, 2)
		if got1 != tc.copy1 || got2 != tc.copy2 {
			t.Errorf("copyKey(%q, 1..2): got %q, %q, want %q, %q", tc.key, got1, got2, tc.copy1, tc.copy2)
		}
		s0, s1, s2 := slot(tc.key), slot(got1), slot(got2)
		if s1 == s0 || s2 == s0 || s1 == s2 {
			t.Errorf("slots of %q and its copies: got %d, %d, %d, want all different", tc.key, s0, s1, s2)
		}
		// The lock shares the entry's slot, tagged or not; only an untagged
		// key holding a '}' cannot become a tag whole (documented limit).
		if tc.tagged || !strings.Contains(tc.key, "}") {
			if lk := lockKey(tc.key); slot(lk) != s0 {
				t.Errorf("slot(lockKey(%q) = %q): got %d, want %d (the entry's)", tc.key, lk, slot(lk), s0)
			}
		}
	}
}

// TestLockPatternMatchesOwnLocksOnly: the pattern an operator's listing
// scans matches the lock of every key of this namespace, tagged or not, and
// no key of another namespace or any entry.
func TestLockPatternMatchesOwnLocksOnly(t *testing.T) {
	t.Parallel()
	for _, ns := range []string{"", "app"} {
		c := &Cache{cfg: Config{Namespace: ns}.withDefaults()}
		other := &Cache{cfg: Config{Namespace: "other"}.withDefaults()}
		for _, key := range []string{"product:v1:{7}", "plain"} {
			for _, tc := range []struct {
				name string
				k    string
				want bool
			}{
				{"own lock", c.lockKey(c.named(key)), true},
				{"own entry", c.named(key), false},
				{"other namespace's lock", other.lockKey(other.named(key)), false},
			} {
				if got, _ := path.Match(c.LockPattern(), tc.k); got != tc.want {
					t.Errorf("namespace %q, %s %q against %q: got match %v, want %v", ns, tc.name, tc.k, c.LockPattern(), got, tc.want)
				}
			}
		}
	}
}

// copiesCache is a lock-mode Cache with Copies 3 on a client of its own,
// closed when the test ends; the client is returned to read the keys.
func copiesCache(t *testing.T) (*Cache, *redis.Client) {
	t.Helper()
	rdb := dbtest.NewRedis(t, redisDB)
	c := New(context.Background(), rdb, Config{Mode: ModeLock, Copies: 3, Channel: "inv:" + dbtest.Unique()}, dbtest.Logger(t))
	t.Cleanup(c.Close)
	return c, rdb
}

// TestCopiesStored: with Copies 3 a load and a Set both write the entry and
// two copies with identical bytes, and Invalidate deletes all three.
func TestCopiesStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, rdb := copiesCache(t)
	prefix := "t" + dbtest.Unique() + ":"
	key := prefix + "{p:1}"
	all := append([]string{key}, c.copyKeys(key)...)
	if len(all) != 3 || all[1] == all[2] {
		t.Fatalf("copyKeys(%q): got %q, want 2 different copies", key, all[1:])
	}

	check := func(when, want string) {
		t.Helper()
		e, err := decodeEntry([]byte(rdb.Get(ctx, key).Val()))
		if err != nil || string(e.Value) != want {
			t.Fatalf("%s: entry got %q, %v, want %q, nil", when, e.Value, err, want)
		}
		ref := rdb.Get(ctx, key).Val()
		for _, k := range all[1:] {
			if got := rdb.Get(ctx, k).Val(); got != ref {
				t.Errorf("%s: copy %s got %q, want the entry's bytes %q", when, k, got, ref)
			}
		}
		if n := len(rdb.Keys(ctx, prefix+"*").Val()); n != 3 {
			t.Errorf("%s: got %d keys, want the entry and 2 copies", when, n)
		}
	}

	res, err := c.Fetch(ctx, key, func(context.Context) ([]byte, error) { return []byte("loaded"), nil })
	if err != nil || string(res.Value) != "loaded" {
		t.Fatalf("Fetch: got %q, %v, want %q, nil", res.Value, err, "loaded")
	}
	check("after load", "loaded")
	for _, k := range all[1:] {
		if ttl := rdb.PTTL(ctx, k).Val(); ttl <= 0 || ttl > c.cfg.TTL {
			t.Errorf("copy %s: got TTL %s, want in (0, %s]", k, ttl, c.cfg.TTL)
		}
	}

	if err := c.Set(ctx, key, []byte("written")); err != nil {
		t.Fatalf("Set: %v", err)
	}
	check("after Set", "written")

	if err := c.Invalidate(ctx, key); err != nil {
		t.Fatalf("Invalidate: %v", err)
	}
	if n := rdb.Exists(ctx, all...).Val(); n != 0 {
		t.Errorf("after Invalidate: got %d of entry and copies left, want 0", n)
	}
}

// TestBaseKey: baseKey undoes copyKey and claims no other key.
func TestBaseKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key, base string
		ok        bool
	}{
		{"p:{42#1}", "p:{42}", true},
		{"p:{42#12}:v2", "p:{42}:v2", true},
		{"{a#2}{b}", "{a}{b}", true},
		{"x}{y#1}", "x}{y}", true},
		{"plain#3", "plain", true},
		{"a{}b#1", "a{}b", true},
		{"open{#1", "open{", true},
		{"p:{a#1#2}", "p:{a#1}", true},
		{"p:{42}", "", false},
		{"plain", "", false},
		{"p:{42#0}", "", false},   // copies count from 1
		{"p:{42#01}", "", false},  // strconv.Itoa writes no leading zero
		{"p:{#1}", "", false},     // copyKey keeps the tag non-empty
		{"p:{42#x}", "", false},   // not a number
		{"x{ab}y#1", "", false},   // a tagged key's copy number is in its tag
		{"lock:{p:1}", "", false}, // a lock is not a copy
		{"p#", "", false},
	}
	for _, tc := range tests {
		if base, ok := baseKey(tc.key); base != tc.base || ok != tc.ok {
			t.Errorf("baseKey(%q): got %q, %v, want %q, %v", tc.key, base, ok, tc.base, tc.ok)
		}
	}
	for _, key := range []string{"p:{42}", "p:{42}:v2", "{a}{b}", "x}{y}", "plain", "a{}b", "open{", "p:{a#1}"} {
		for n := 1; n <= 12; n++ {
			if base, ok := baseKey(copyKey(key, n)); base != key || !ok {
				t.Errorf("baseKey(copyKey(%q, %d)): got %q, %v, want %q, true", key, n, base, ok, key)
			}
		}
	}
}

// TestCopiesSpreadOverSlotRanges: copy i of a key lands in slot range
// (r+i) mod copies of copies equal ranges (r the entry's), so on a cluster
// of that many masters no two of them share a master; every key tried,
// not a lucky one.
func TestCopiesSpreadOverSlotRanges(t *testing.T) {
	t.Parallel()
	for _, copies := range []int{2, 3, 4, 6} {
		c := &Cache{cfg: Config{Copies: copies}}
		for id := range 2000 {
			key := "product:v1:{" + strconv.Itoa(id) + "}"
			ranges := map[int]bool{slotRange(slot(key), copies): true}
			for _, k := range c.copyKeys(key) {
				if base, ok := baseKey(k); !ok || base != key {
					t.Fatalf("baseKey(%q): got %q, %v, want %q", k, base, ok, key)
				}
				ranges[slotRange(slot(k), copies)] = true
			}
			if len(ranges) != copies {
				t.Fatalf("copies %d of %q: got %d slot ranges, want %d", copies, key, len(ranges), copies)
			}
		}
	}
	// The ranges are redis-cli's: 3 masters get 0-5460, 5461-10922, 10923-16383.
	for i, want := range []int{0, 5461, 10923, 16384} {
		if got := SlotRangeStart(i, 3); got != want {
			t.Errorf("SlotRangeStart(%d, 3): got %d, want %d", i, got, want)
		}
	}
	if got := keySlot("foo"); got != slot("foo") {
		t.Errorf("keySlot(foo): got %d, want %d", got, slot("foo"))
	}
}

// TestCheckKeyScheme: the start-up check accepts the product scheme and
// refuses one whose lock or copies would break on a cluster.
func TestCheckKeyScheme(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key    string
		copies int
		ok     bool
	}{
		{"product:v1:{42}", 3, true},
		{"ns:product:v1:{42}", 8, true},
		{"product:v1:42", 3, true},    // untagged: the lock tags the whole key
		{"x}product:v1:42", 1, false}, // untagged with '}': the lock cannot
	}
	for _, tc := range tests {
		err := CheckKeyScheme(tc.key, tc.copies)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrKeyScheme)) {
			t.Errorf("CheckKeyScheme(%q, %d): got %v, want ok=%v", tc.key, tc.copies, err, tc.ok)
		}
	}
}

// TestLateCopiesNeverOutliveANewerEntry: a load's copies that land after a
// newer Set (or an Invalidate) replaced the entry are deleted, so no read
// serves the older value from a copy. The interleaving is forced by calling
// writeCopies late, as a slow loader would.
func TestLateCopiesNeverOutliveANewerEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, rdb := copiesCache(t)
	for _, then := range []string{"set", "invalidate"} {
		key := "t" + dbtest.Unique() + ":{p:1}"
		old, _ := c.newEntry(key, []byte("old"), false, 0)
		switch then {
		case "set":
			if err := c.Set(ctx, key, []byte("new")); err != nil {
				t.Fatal(err)
			}
		case "invalidate":
			if err := c.Invalidate(ctx, key); err != nil {
				t.Fatal(err)
			}
		}
		c.writeCopies(ctx, key, old.encode(), time.Minute) // the slow loader's copies arrive last
		for _, k := range c.copyKeys(key) {
			if b, err := rdb.Get(ctx, k).Bytes(); err == nil {
				if e, _ := decodeEntry(b); string(e.Value) == "old" {
					t.Errorf("after %s: copy %s holds the older value", then, k)
				}
			}
		}
		for range 30 {
			res, err := c.Fetch(ctx, key, func(context.Context) ([]byte, error) { return []byte("loaded"), nil })
			if err != nil || string(res.Value) == "old" {
				t.Fatalf("after %s: Fetch got %q, %v; want never the older value", then, res.Value, err)
			}
		}
		rdb.Del(ctx, append([]string{key}, c.copyKeys(key)...)...)
	}
}
