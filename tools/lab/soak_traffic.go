package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// traffic is the soak's client side: an open-loop mix of requests at a
// fixed rate, each on its own goroutine, to live instances.
type traffic struct {
	fleet  *fleet
	hc     *http.Client
	book   *book
	ledger *ledger
	apiKey string
	prefix string // of every Idempotency-Key this soak sends
	rate   float64
	fault  atomic.Pointer[string] // the fault staged now (nil: none)
	seq    atomic.Int64
	wg     sync.WaitGroup
}

// The mix, per 100 requests: hot reads (ids 1-10), cold reads (all 1000),
// unknown ids (404, cached negatively), list pages, product writes, orders
// and reports.
var soakMix = []struct {
	weight int
	kind   string
}{{48, "hot"}, {22, "cold"}, {4, "unknown"}, {12, "list"}, {3, "write"}, {10, "order"}, {1, "report"}}

// run sends requests for d (or until ctx ends), then waits for those in
// flight: each is bounded by the client's timeout.
func (t *traffic) run(ctx context.Context, d time.Duration) {
	start := t.book.start
	sent := 0
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil && time.Since(start) < d {
		due := int(time.Since(start).Seconds() * t.rate)
		for ; sent < due; sent++ {
			kind := pickKind(rand.IntN(100))
			t.wg.Go(func() { t.one(ctx, kind) })
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	t.wg.Wait()
}

func pickKind(r int) string {
	for _, m := range soakMix {
		if r < m.weight {
			return m.kind
		}
		r -= m.weight
	}
	return "hot"
}

func (t *traffic) one(ctx context.Context, kind string) {
	switch kind {
	case "hot":
		t.send(ctx, kind, -1, "GET", fmt.Sprintf("/products/%d", 1+rand.IntN(10)), "", nil)
	case "cold":
		t.send(ctx, kind, -1, "GET", fmt.Sprintf("/products/%d", 1+rand.IntN(1000)), "", nil)
	case "unknown":
		t.send(ctx, kind, -1, "GET", fmt.Sprintf("/products/%d", 100_000+rand.IntN(1000)), "", nil)
	case "list":
		t.send(ctx, kind, -1, "GET", fmt.Sprintf("/products?limit=20&after=%d", rand.IntN(980)), "", nil)
	case "report":
		t.send(ctx, kind, -1, "GET", "/reports/top-products", "", nil)
	case "write":
		id := 901 + rand.IntN(100)
		body := fmt.Sprintf(`{"name":"Product %d rev %d","price_cents":%d}`, id, t.seq.Add(1), 100+rand.IntN(9900))
		t.send(ctx, kind, -1, "PUT", fmt.Sprintf("/products/%d", id), body, http.Header{"Authorization": {"Bearer " + t.apiKey}})
	case "order":
		t.order(ctx)
	}
}

// order places one order as a careful client does: an Idempotency-Key of
// its own, retried with the same key after a 503, a 429 or a cut
// connection (on another instance, 0.4 s, 0.8 s … 2 s apart, for up to
// about 10 s: longer than a fault's outage), and one order in five sent once more
// after its 201, as a client that lost the answer would.
func (t *traffic) order(ctx context.Context) {
	key := fmt.Sprintf("%s%d", t.prefix, t.seq.Add(1))
	body := fmt.Sprintf(`{"product_id":%d,"quantity":1}`, 1+rand.IntN(1000))
	repeat := rand.IntN(5) == 0
	hdr := http.Header{"Idempotency-Key": {key}}
	last := -1
	for attempt := range 8 {
		o, slot := t.send(ctx, "order", last, "POST", "/orders", body, hdr)
		last = slot
		switch {
		case o.status == http.StatusCreated:
			var created struct {
				ID int64 `json:"id"`
			}
			if json.Unmarshal([]byte(o.body), &created) == nil && created.ID > 0 {
				t.ledger.confirmed(key, created.ID)
			}
			if !repeat {
				return
			}
			repeat = false
		case o.status >= 400 && o.status < 500 && o.status != http.StatusTooManyRequests:
			return // out of stock (409) or refused for good
		}
		if sleepCtx(ctx, min(time.Duration(attempt+1)*400*time.Millisecond, 2*time.Second)) != nil {
			break
		}
	}
	t.ledger.abandoned(key)
}

// send makes one request to a live instance (not slot not, if another is
// up) and books its outcome under the minute it was sent.
func (t *traffic) send(ctx context.Context, kind string, not int, method, path, body string, hdr http.Header) (outcome, int) {
	slot, base, gen := t.fleet.pick(not)
	sent := time.Now()
	fault := t.fault.Load()
	o := t.do(ctx, method, base+path, body, hdr)
	o.latency, o.kind = time.Since(sent), kind
	if fault != nil {
		o.fault = *fault
	}
	if o.status == 0 && t.fleet.killedSince(slot, gen) {
		o.killed = true
	}
	if o.status == 0 && ctx.Err() != nil {
		return o, slot // the soak is over: not the service's failure
	}
	t.book.add(sent, o)
	return o, slot
}

func (t *traffic) do(ctx context.Context, method, url, body string, hdr http.Header) outcome {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return outcome{err: err.Error()}
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		e := shortErr(err)
		if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "Client.Timeout") {
			e = "client timeout"
		}
		return outcome{err: e}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return outcome{err: "reading the body: " + shortErr(err)}
	}
	return outcome{status: resp.StatusCode, body: string(b)}
}
