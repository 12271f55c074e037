package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// failoverLoad is the light load of the failover test: buyers placing
// orders with Idempotency-Keys, retried with the same key until they get
// a 201 (or a 409), as a careful client does; readers reading products
// that are in the cache. It records what every client was told.
type failoverLoad struct {
	base   string
	prefix string // of every Idempotency-Key
	cached []int64
	stop   chan struct{}
	wg     sync.WaitGroup
	seq    atomic.Int64

	mu        sync.Mutex
	created   map[string]int64 // key → the order id its 201 named
	createdAt []time.Time      // when each 201 arrived
	gaveUp    []string         // keys that never got a 201
	orderAns  map[int]int      // status → count, every POST /orders answer
	readFails []string         // any read of a cached product that was not a 200
	reads     int
}

// orderProducts are the products the buyers buy from (1000 in stock each).
var orderProducts = []int64{101, 102, 103, 104, 105}

func newFailoverLoad(base, prefix string, cached []int64) *failoverLoad {
	return &failoverLoad{base: base, prefix: prefix, cached: cached, stop: make(chan struct{}),
		created: map[string]int64{}, orderAns: map[int]int{}}
}

// start runs buyers and readers until end.
func (l *failoverLoad) start(buyers, readers int) {
	for range buyers {
		l.wg.Go(l.buy)
	}
	for range readers {
		l.wg.Go(l.read)
	}
}

// end stops the clients after their current order (each finishes its
// retries first, so no order is left in doubt) and waits for them.
func (l *failoverLoad) end() {
	close(l.stop)
	l.wg.Wait()
}

func (l *failoverLoad) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

func (l *failoverLoad) buy() {
	for !l.stopped() {
		n := l.seq.Add(1)
		l.place(fmt.Sprintf("%s-%d", l.prefix, n), orderProducts[n%int64(len(orderProducts))])
	}
}

// place sends one order and retries it with the same key and body until a
// 201 or a 409, for at most 30 s.
func (l *failoverLoad) place(key string, product int64) {
	body := fmt.Sprintf(`{"product_id":%d,"quantity":1}`, product)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, b, err := send(http.MethodPost, l.base+"/orders", map[string]string{"Idempotency-Key": key}, body)
		status := 0
		if err == nil {
			status = resp.StatusCode
		}
		l.mu.Lock()
		l.orderAns[status]++
		l.mu.Unlock()
		switch status {
		case http.StatusCreated:
			var o struct {
				ID int64 `json:"id"`
			}
			_ = json.Unmarshal(b, &o)
			l.mu.Lock()
			l.created[key] = o.ID
			l.createdAt = append(l.createdAt, time.Now())
			l.mu.Unlock()
			return
		case http.StatusConflict:
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	l.mu.Lock()
	l.gaveUp = append(l.gaveUp, key)
	l.mu.Unlock()
}

func (l *failoverLoad) read() {
	for i := 0; !l.stopped(); i++ {
		id := l.cached[i%len(l.cached)]
		a := timedGet(fmt.Sprintf("%s/products/%d", l.base, id))
		l.mu.Lock()
		l.reads++
		if a.status != http.StatusOK {
			l.readFails = append(l.readFails, fmt.Sprintf("GET /products/%d: %d %v after %s", id, a.status, a.err, a.elapsed))
		}
		l.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
}

// firstCreatedAfter is when the first 201 after t arrived (zero if none).
func (l *failoverLoad) firstCreatedAfter(t time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, at := range l.createdAt {
		if at.After(t) {
			return at
		}
	}
	return time.Time{}
}

// createdCount is how many 201s the buyers got so far.
func (l *failoverLoad) createdCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.created)
}
