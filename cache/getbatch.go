package cache

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// getBatch sends GETs that arrive together as one pipeline, as rueidis and
// ioredis do (auto-pipelining; go-redis has none, so it is built here on
// its Pipeline). Without it a burst of 200 cold reads is 200 GETs queued
// for go-redis's 20 connections, one round trip each, ten in a row: that
// queue is what held a read the gate was about to refuse for tens of
// milliseconds (docs/benchmarks.md, "How fast is a refusal?"). With it the
// burst is a few pipelines. A lone GET pays a hand-off to a sender (a few
// microseconds) and goes as a plain GET.
//
// The senders are goroutines owned by the Cache: each takes the first GET
// waiting, everything queued behind it (up to maxBatch), sends them, and
// answers each. A caller that gives up stops waiting; a GET whose caller
// has already given up is not sent.
type getBatch struct {
	rdb  redis.UniversalClient
	life context.Context // the Cache's: senders stop when it ends
	reqs chan *pendingGet
}

// pendingGet is one caller's GET and, once done is closed, its answer.
type pendingGet struct {
	ctx  context.Context
	key  string
	val  []byte
	err  error
	done chan struct{}
}

const (
	// getSenders pipelines may be in flight at once: a slow round trip
	// does not hold every read behind it, and the connections they take
	// leave go-redis's pool to the lock, the writes and the rest.
	getSenders = 4
	// maxBatch bounds one pipeline, so one reply stays small to parse.
	maxBatch = 128
	// getLimit bounds one pipeline beyond the client's own I/O timeouts.
	getLimit = sharedReadLimit
)

// startGetBatch starts the senders; wg counts them until life ends.
func startGetBatch(life context.Context, rdb redis.UniversalClient, wg *sync.WaitGroup) *getBatch {
	b := &getBatch{rdb: rdb, life: life, reqs: make(chan *pendingGet, 4*maxBatch)}
	wg.Add(getSenders)
	for range getSenders {
		go func() {
			defer wg.Done()
			b.send()
		}()
	}
	return b
}

// get reads key, in a pipeline with whatever other GETs are waiting.
func (b *getBatch) get(ctx context.Context, key string) ([]byte, error) {
	p := &pendingGet{ctx: ctx, key: key, done: make(chan struct{})}
	select {
	case b.reqs <- p:
	default: // the queue is full (a burst beyond every sender): read on our own
		return b.rdb.Get(ctx, key).Bytes()
	}
	select {
	case <-p.done:
		return p.val, p.err
	case <-ctx.Done():
		return nil, ctx.Err() // readAs names the key
	case <-b.life.Done(): // closed before a sender took it
		return b.rdb.Get(ctx, key).Bytes()
	}
}

// send runs one sender until the Cache closes.
func (b *getBatch) send() {
	batch := make([]*pendingGet, 0, maxBatch)
	for {
		select {
		case p := <-b.reqs:
			batch = append(batch[:0], p)
		case <-b.life.Done():
			return
		}
	more:
		for len(batch) < maxBatch {
			select {
			case p := <-b.reqs:
				batch = append(batch, p)
			default:
				break more
			}
		}
		b.exec(batch)
	}
}

// exec sends one batch and answers each of its callers.
func (b *getBatch) exec(batch []*pendingGet) {
	live := batch[:0]
	for _, p := range batch {
		if p.ctx.Err() == nil {
			live = append(live, p)
		}
	}
	if len(live) == 0 {
		return
	}
	if len(live) == 1 { // a lone GET goes as a plain GET, in its caller's context
		p := live[0]
		p.val, p.err = b.rdb.Get(p.ctx, p.key).Bytes()
		close(p.done)
		return
	}
	// The pipeline is no one caller's: it ends at the client's I/O
	// timeouts or getLimit, and each caller stops waiting at its own
	// deadline.
	ctx, cancel := context.WithTimeout(b.life, getLimit)
	defer cancel()
	pipe := b.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(live))
	for i, p := range live {
		cmds[i] = pipe.Get(ctx, p.key)
	}
	_, _ = pipe.Exec(ctx) // each command carries its own answer or error
	for i, p := range live {
		p.val, p.err = cmds[i].Bytes()
		close(p.done)
	}
}
