package cache

import (
	"sync/atomic"
	"time"
)

// outageLog rate-limits the warnings of the paths every request takes while
// Redis is away (read failed, lock unavailable): one line a second, with how
// many were left out, instead of one per request flooding the log exactly
// when it is needed.
type outageLog struct {
	last    atomic.Int64 // unix second of the last line
	dropped atomic.Int64 // lines left out since
}

// warn logs msg unless a line was logged this second.
func (c *Cache) warnOutage(msg string, args ...any) {
	now := time.Now().Unix()
	last := c.outage.last.Load()
	if now <= last || !c.outage.last.CompareAndSwap(last, now) {
		c.outage.dropped.Add(1)
		return
	}
	if n := c.outage.dropped.Swap(0); n > 0 {
		args = append(args, "similar_lines_left_out", n)
	}
	c.log.Warn(msg, args...)
}
