package cache

import (
	"errors"
	"fmt"
	"math"
	"strings"

	lru "github.com/hashicorp/golang-lru/v2"
)

// slotCount is the number of Redis Cluster hash slots.
const slotCount = 16384

// MaxCopies is the most copies a key may have (Config.Copies): one per
// Redis Cluster slot. More cannot land in ranges of their own, and the
// search for their numbers (copyNumbers) would not end: at 100 000 copies
// a start never finished.
const MaxCopies = slotCount

// keySlot is the Redis Cluster slot of key: CRC16 (XMODEM) of its hash tag
// (between the first '{' and the next '}') when non-empty, else of the
// whole key, modulo 16384. Copies need it to pick their slots.
func keySlot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc % slotCount)
}

// SlotRangeStart is the first slot of range i of n equal ranges, split as
// `redis-cli --cluster create` splits slots over n masters (and as the
// test cluster does). Copies aim at these ranges.
func SlotRangeStart(i, n int) int {
	if i <= 0 {
		return 0
	}
	if i >= n {
		return slotCount
	}
	return int(math.Round(float64(i)*slotCount/float64(n)-1)) + 1
}

// slotRange is the range (0..n-1) that slot s falls in.
func slotRange(s, n int) int {
	i := s * n / slotCount
	for i > 0 && s < SlotRangeStart(i, n) {
		i--
	}
	for i < n-1 && s >= SlotRangeStart(i+1, n) {
		i++
	}
	return i
}

// maxCopySearch bounds the search for a copy number that lands in a given
// slot range: each try hits with probability 1/copies, so 64 tries per
// copy miss with odds below (1-1/copies)^64.
const maxCopySearch = 64

// copyNumbers are the copy numbers (for copyKey) of copies 1..copies-1 of
// key. Random copy tags would often share a master (3 copies on 3 masters
// all differ only 2 times in 9), so copy i takes the first number whose
// slot falls in range (r+i) mod copies of copies equal slot ranges, r the
// entry's own range: on a cluster split evenly over `copies` masters, the
// entry and its copies sit on as many different masters. After a
// reshard the spread is only as good as chance. Every instance computes
// the same numbers, and they never repeat for one key.
//
// One scan finds the first number of every range (about copies·ln(copies)
// slots to hash). Searching each copy's range anew for every copy before
// it cost copies³ hashes per key: 0.17 ms of CPU per write at 8 copies,
// 13 ms at 64, and a start that never ended at 1000.
func copyNumbers(key string, copies int) []int {
	if copies <= 1 {
		return nil
	}
	own := slotRange(keySlot(key), copies)
	first := make([]int, copies) // first number landing in each range; 0: none
	for m, found := 1, 0; m <= maxCopySearch*copies && found < copies-1; m++ {
		if r := slotRange(keySlot(copyKey(key, m)), copies); r != own && first[r] == 0 {
			first[r] = m
			found++
		}
	}
	nums := make([]int, 0, copies-1)
	used := make([]bool, 0, copies)
	for i := 1; i < copies; i++ {
		pick := first[(own+i)%copies]
		if pick == 0 || pick < len(used) && used[pick] {
			pick = searchCopy(key, i, copies, used) // a range no number hit
		}
		for len(used) <= pick {
			used = append(used, false)
		}
		used[pick] = true
		nums = append(nums, pick)
	}
	return nums
}

// searchCopy finds the smallest unused number whose copy lands in the
// range aimed at by copy i, or the smallest unused number when none does
// within the bound. Only a range that no number hit within the bound
// (odds below (1-1/copies)^64 per copy) comes here.
func searchCopy(key string, i, copies int, used []bool) int {
	free := func(m int) bool { return m >= len(used) || !used[m] }
	want := (slotRange(keySlot(key), copies) + i) % copies
	for m := 1; m <= maxCopySearch*copies; m++ {
		if free(m) && slotRange(keySlot(copyKey(key, m)), copies) == want {
			return m
		}
	}
	for m := 1; ; m++ {
		if free(m) {
			return m
		}
	}
}

// copyKeys names the copies (beyond the entry itself) of key. The numbers
// are remembered per key (a bounded LRU): a hot key's read picks one of
// its copies on every request.
func (c *Cache) copyKeys(key string) []string {
	nums := c.copyNumbersOf(key)
	keys := make([]string, 0, len(nums))
	for _, n := range nums {
		keys = append(keys, copyKey(key, n))
	}
	return keys
}

// copyNumbersOf is copyNumbers(key, Config.Copies), remembered.
func (c *Cache) copyNumbersOf(key string) []int {
	if c.cfg.Copies <= 1 {
		return nil
	}
	if c.copyMemo == nil { // a Cache built without New (CheckKeyScheme)
		return copyNumbers(key, c.cfg.Copies)
	}
	if nums, ok := c.copyMemo.Get(key); ok {
		return nums
	}
	nums := copyNumbers(key, c.cfg.Copies)
	c.copyMemo.Add(key, nums)
	return nums
}

// ErrKeyScheme means a key scheme would break a multi-key script or the
// spread of copies on Redis Cluster.
var ErrKeyScheme = errors.New("cache: key scheme unsafe on Redis Cluster")

// CheckKeyScheme checks the keys this package derives from key (its lock,
// its copies) against Redis Cluster's slot rules, so a start-up can refuse
// a scheme that works on one server and breaks on a cluster: the lock must
// share the entry's slot (the fenced write is one Lua script over both),
// and no copy may share it (copies exist to spread reads over masters).
func CheckKeyScheme(key string, copies int) error {
	s := keySlot(key)
	if lk := lockKey(key); keySlot(lk) != s {
		return fmt.Errorf("%w: lock %q (slot %d) and entry %q (slot %d) differ, so the fenced write would fail with CROSSSLOT; give the key a {hash tag} without '}' before it",
			ErrKeyScheme, lk, keySlot(lk), key, s)
	}
	c := &Cache{cfg: Config{Copies: copies}}
	for _, ck := range c.copyKeys(key) {
		if keySlot(ck) == s {
			return fmt.Errorf("%w: copy %q shares slot %d with its entry %q, so it spreads nothing; the hash tag must hold the id (e.g. product:v1:{42})",
				ErrKeyScheme, ck, s, key)
		}
	}
	return nil
}

// newCopyMemo remembers the copy numbers of up to 4096 keys (about 100
// bytes each at 8 copies): nil when entries have no copies.
func newCopyMemo(copies int) *lru.Cache[string, []int] {
	if copies <= 1 {
		return nil
	}
	l, _ := lru.New[string, []int](4096) // errors only for a size ≤ 0
	return l
}
