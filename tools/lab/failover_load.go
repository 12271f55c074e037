package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// failoverLoad is the failover experiment's open-loop load: GETs of a few
// hot products (in the cache before it starts) and orders, each with an
// Idempotency-Key of its own and retried with that key, on the next
// instance, until a 201 or a refusal for good, as a careful client does.
// Every answer is kept with when it was asked for and when it came.
type failoverLoad struct {
	bases  []string
	prefix string // of every Idempotency-Key
	hot    []int
	client *http.Client
	ledger *ledger

	stop  chan struct{}
	ticks sync.WaitGroup // the two pacing loops
	reqs  sync.WaitGroup // requests and orders in flight

	mu     sync.Mutex
	reads  []answer
	orders []answer // every attempt of every order
	keys   int      // orders started
}

// answer is one HTTP request's outcome (status 0: no answer).
type answer struct {
	sent, done time.Time
	status     int
}

// failoverOrderGiveUp bounds an order's retries: far beyond the outage
// the experiment stages, so an order given up on is a finding.
const failoverOrderGiveUp = 20 * time.Second

// orderProducts are the products the orders buy from (products 101-110).
func orderProduct(n int) int { return 101 + n%10 }

func newFailoverLoad(bases []string, prefix string, hot []int) *failoverLoad {
	return &failoverLoad{bases: bases, prefix: prefix, hot: hot, client: newClient(64), ledger: newLedger(),
		stop: make(chan struct{})}
}

// start paces reads and orders at their rates until end.
func (f *failoverLoad) start(ctx context.Context, readRate, orderRate float64) {
	f.ticks.Go(func() {
		f.pace(ctx, readRate, func(i int) {
			id := f.hot[i%len(f.hot)]
			f.record(&f.reads, f.get(ctx, fmt.Sprintf("%s/products/%d", f.bases[i%len(f.bases)], id)))
		})
	})
	f.ticks.Go(func() { f.pace(ctx, orderRate, func(i int) { f.order(ctx, i) }) })
}

// pace calls fn(i) in a goroutine of its own at rate per second.
func (f *failoverLoad) pace(ctx context.Context, rate float64, fn func(i int)) {
	t0 := time.Now()
	for i := 0; ; i++ {
		at := t0.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		select {
		case <-f.stop:
			return
		case <-ctx.Done():
			return
		case <-time.After(time.Until(at)):
		}
		f.reqs.Go(func() { fn(i) })
	}
}

// end stops new requests and waits for those in flight, each order to the
// end of its retries, so no order is left in doubt.
func (f *failoverLoad) end() {
	close(f.stop)
	f.ticks.Wait()
	f.reqs.Wait()
	f.client.CloseIdleConnections()
}

// order places order number n, retried every 200 ms with the same key
// after a 5xx, a 429 or no answer.
func (f *failoverLoad) order(ctx context.Context, n int) {
	key := fmt.Sprintf("%s%d", f.prefix, n)
	body := fmt.Sprintf(`{"product_id":%d,"quantity":1}`, orderProduct(n))
	f.mu.Lock()
	f.keys++
	f.mu.Unlock()
	giveUp := time.Now().Add(failoverOrderGiveUp)
	for attempt := 0; time.Now().Before(giveUp) && ctx.Err() == nil; attempt++ {
		a, b := f.post(ctx, f.bases[(n+attempt)%len(f.bases)]+"/orders", key, body)
		f.record(&f.orders, a)
		switch {
		case a.status == http.StatusCreated:
			var o struct {
				ID int64 `json:"id"`
			}
			if json.Unmarshal(b, &o) == nil && o.ID > 0 {
				f.ledger.confirmed(key, o.ID)
			}
			return
		case a.status >= 400 && a.status < 500 && a.status != http.StatusTooManyRequests:
			return // refused for good (a 409: out of stock)
		}
		if sleepCtx(ctx, 200*time.Millisecond) != nil {
			break
		}
	}
	f.ledger.abandoned(key)
}

func (f *failoverLoad) record(to *[]answer, a answer) {
	f.mu.Lock()
	*to = append(*to, a)
	f.mu.Unlock()
}

func (f *failoverLoad) get(ctx context.Context, url string) answer {
	return getAnswer(ctx, f.client, url)
}

func getAnswer(ctx context.Context, client *http.Client, url string) answer {
	a := answer{sent: time.Now()}
	if req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil); err == nil {
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			a.status = resp.StatusCode
		}
	}
	a.done = time.Now()
	return a
}

func (f *failoverLoad) post(ctx context.Context, url, key, body string) (answer, []byte) {
	a := answer{sent: time.Now()}
	var b []byte
	if req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body)); err == nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		if resp, err := f.client.Do(req); err == nil {
			b, _ = io.ReadAll(io.LimitReader(resp.Body, 4096))
			_ = resp.Body.Close()
			a.status = resp.StatusCode
		}
	}
	a.done = time.Now()
	return a, b
}

// firstCreated is when the first 201 came to an order attempt sent after
// since (zero if none yet). Sent after the old primary was stopped, a 201
// can only be the new primary's commit: it may come a moment before
// pg_ctl promote returns, which polls for the promotion's end.
func (f *failoverLoad) firstCreated(since time.Time) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	var first time.Time
	for _, a := range f.orders {
		if a.status == http.StatusCreated && a.sent.After(since) && (first.IsZero() || a.done.Before(first)) {
			first = a.done
		}
	}
	return first
}
