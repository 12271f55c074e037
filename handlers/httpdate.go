package handlers

import (
	"net/http"
	"sync/atomic"
	"time"
)

// httpDates formats Last-Modified values and remembers the recent ones. A
// hot product is answered thousands of times a second with the same
// updated_at, and formatting it afresh each time was a sixtieth of the
// answer's CPU. http.TimeFormat has a resolution of one second, so a slot
// keyed by the Unix second holds exactly the string Format would write;
// slots are direct-mapped, so many products only cost a format each when
// two of them share a slot, as every read did before.
type httpDates struct {
	slots [256]atomic.Pointer[httpDate]
}

type httpDate struct {
	sec  int64
	text string
}

// format is t.UTC().Format(http.TimeFormat).
func (d *httpDates) format(t time.Time) string {
	sec := t.Unix()
	i := sec % int64(len(d.slots))
	if i < 0 { // before 1970
		i += int64(len(d.slots))
	}
	slot := &d.slots[i]
	if e := slot.Load(); e != nil && e.sec == sec {
		return e.text
	}
	text := t.UTC().Format(http.TimeFormat)
	slot.Store(&httpDate{sec: sec, text: text})
	return text
}
