package main

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// sender sends one request on a worker's own connection and says whether
// it was answered 200, and how long that took.
type sender func(ctx context.Context) (ok bool, latency time.Duration)

// closedLoop runs workers that each send the next GET as soon as the last
// one is answered, for d; open gives each worker its sender (and what
// closes it).
func closedLoop(ctx context.Context, workers int, d time.Duration, open func(context.Context) (sender, func(), error)) hotKeyRound {
	start := time.Now()
	end := start.Add(d)
	ctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	// The round is over at end by the clock: a connection's deadline (set
	// to end) can fire before ctx is marked done, and a request cut by it
	// is the round ending, not a failure.
	running := func() bool { return ctx.Err() == nil && time.Now().Before(end) }
	var (
		mu     sync.Mutex
		lat    []time.Duration
		failed int
	)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var mine []time.Duration
			bad := 0
			send, done, err := open(ctx)
			if err != nil {
				bad++
			} else {
				defer done()
				for running() {
					ok, took := send(ctx)
					switch {
					case ok:
						mine = append(mine, took)
					case running():
						bad++
					}
				}
			}
			mu.Lock()
			lat, failed = append(lat, mine...), failed+bad
			mu.Unlock()
		})
	}
	wg.Wait()
	return hotKeyRound{rps: float64(len(lat)) / time.Since(start).Seconds(), p99: percentile(lat, 99), failed: failed}
}

// viaNetHTTP is a closed loop's worker on net/http's client (hc, shared
// by the round's workers).
func viaNetHTTP(hc *http.Client, url string) func(context.Context) (sender, func(), error) {
	return func(context.Context) (sender, func(), error) {
		return func(ctx context.Context) (bool, time.Duration) {
			t0 := time.Now()
			return rawGet(ctx, hc, url) == http.StatusOK, time.Since(t0)
		}, func() {}, nil
	}
}

// viaRawConn is a closed loop's worker on a raw connection of its own
// (rawconn.go), as wrk drives a server.
func viaRawConn(base, path string) func(context.Context) (sender, func(), error) {
	return func(ctx context.Context) (sender, func(), error) {
		rc, err := dialRaw(ctx, base, path)
		if err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context) (bool, time.Duration) {
			r := rc.get(ctx, path)
			return r.Status == http.StatusOK && r.Err == "", r.Latency
		}, func() { _ = rc.c.Close() }, nil
	}
}

// rawGet sends one GET and reads the body, the least a client can do (0:
// no answer).
func rawGet(ctx context.Context, hc *http.Client, url string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}
