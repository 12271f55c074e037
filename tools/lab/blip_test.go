package main

import (
	"testing"
	"time"
)

// TestSummarizeBlip: recovery is measured from the link's return to the
// first success of each kind sent after it; failures after both kinds
// succeeded are counted; failures during the cut are counted apart.
func TestSummarizeBlip(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	cut, back := at(1000), at(3000)
	results := []blipResult{
		{order: false, sent: at(500), done: at(510), ok: true},
		{order: true, sent: at(1500), done: at(1510), ok: false},
		{order: false, sent: at(2500), done: at(2510), ok: false},
		{order: false, sent: at(3100), done: at(3110), ok: false},
		{order: true, sent: at(3200), done: at(3260), ok: true},
		{order: false, sent: at(3400), done: at(3420), ok: true},
		{order: true, sent: at(3500), done: at(3510), ok: false},
		{order: false, sent: at(3600), done: at(3610), ok: true},
	}
	got := summarizeBlip(results, cut, back)
	want := blipStats{requests: 8, failedInCut: 2, failedAfter: 1, readsBack: 420 * time.Millisecond, ordersBack: 260 * time.Millisecond,
		lastFailure: 510 * time.Millisecond}
	if got != want {
		t.Errorf("summarizeBlip: got %+v, want %+v", got, want)
	}
	if got := summarizeBlip(results[:4], cut, back); got.readsBack != -1 || got.ordersBack != -1 {
		t.Errorf("never recovered: got %+v, want readsBack and ordersBack -1", got)
	}
}
