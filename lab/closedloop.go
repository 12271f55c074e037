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
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		mu     sync.Mutex
		lat    []time.Duration
		failed int
	)
	start := time.Now()
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
				for ctx.Err() == nil {
					ok, took := send(ctx)
					switch {
					case ok:
						mine = append(mine, took)
					case ctx.Err() == nil:
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
