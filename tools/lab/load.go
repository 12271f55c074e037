package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stampede-guard/api/client"
)

// clientTimeout bounds every request the lab sends: longer than any
// REQUEST_TIMEOUT the experiments configure, so the service, not the client,
// decides when a request has failed.
const clientTimeout = 10 * time.Second

// Target is one request: an instance's base URL and a path.
type Target struct {
	Base string
	Path string
}

// Result is what one request saw.
type Result struct {
	Status     int // 0 when no answer came (the error says why)
	XCache     string
	RetryAfter bool
	Latency    time.Duration
	Body       string // the first bytes of the answer
	Err        string
}

// newClient returns a client that can keep perHost connections open to
// each instance, so a burst does not queue on the client side.
func newClient(perHost int) *http.Client {
	return &http.Client{
		Timeout: clientTimeout,
		Transport: &http.Transport{
			MaxIdleConns:        0, // no global cap
			MaxIdleConnsPerHost: max(perHost, 2),
			IdleConnTimeout:     30 * time.Second,
			DisableCompression:  true,
		},
	}
}

// Burst sends every target at once: each gets its own goroutine and an
// already open connection of its own (rawconn.go), and all are released
// together by a barrier.
func Burst(ctx context.Context, targets []Target) ([]Result, time.Duration) {
	rs, wall, _ := burstAt(ctx, targets)
	return rs, wall
}

// burstAt is Burst that also says when the barrier opened.
func burstAt(ctx context.Context, targets []Target) ([]Result, time.Duration, time.Time) {
	if len(targets) == 0 {
		return nil, 0, time.Time{}
	}
	results := make([]Result, len(targets))
	conns := make([]*rawConn, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			start := time.Now()
			var err error
			if conns[i], err = dialRaw(ctx, t.Base, "/healthz"); err != nil {
				// Failed before the barrier: a failure, timed by its dial.
				results[i] = Result{Latency: time.Since(start), Err: "dial: " + shortErr(err)}
			}
		})
	}
	wg.Wait()
	defer func() {
		for _, c := range conns {
			if c != nil {
				_ = c.c.Close()
			}
		}
	}()
	stopCut := context.AfterFunc(ctx, func() { // a cancelled lab stops waiting
		for _, c := range conns {
			if c != nil {
				_ = c.c.SetDeadline(time.Now())
			}
		}
	})
	defer stopCut()

	bodies := make([][]byte, len(targets))
	start := make(chan struct{})
	var ready, done sync.WaitGroup
	for i, t := range targets {
		if conns[i] == nil {
			continue
		}
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			results[i], bodies[i] = conns[i].getBody(ctx, t.Path)
		}()
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	done.Wait()
	wall := time.Since(t0)
	for i, t := range targets {
		if _, ok := productID(t.Path); ok {
			checkProduct(&results[i], bodies[i])
		}
	}
	return results, wall, t0
}

// Stream sends the targets in order through a fixed number of workers: a
// steady stream of traffic rather than one burst.
func Stream(ctx context.Context, targets []Target, workers int) ([]Result, time.Duration) {
	hc := newClient(workers)
	defer hc.CloseIdleConnections()
	results := make([]Result, len(targets))
	next := make(chan int)
	var wg sync.WaitGroup
	t0 := time.Now()
	for range workers {
		wg.Go(func() {
			for i := range next {
				results[i] = do(ctx, hc, targets[i])
			}
		})
	}
	for i := range targets {
		next <- i
	}
	close(next)
	wg.Wait()
	return results, time.Since(t0)
}

// Paced sends the targets in order at a fixed rate (requests per second),
// each on its own goroutine whether or not earlier ones have finished: an
// open-loop arrival, so a slow answer shows as latency rather than as a
// slower client.
func Paced(ctx context.Context, targets []Target, rate float64) ([]Result, time.Duration) {
	hc := newClient(64)
	defer hc.CloseIdleConnections()
	results := make([]Result, len(targets))
	var wg sync.WaitGroup
	t0 := time.Now()
	for i, t := range targets {
		at := t0.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if sleepCtx(ctx, time.Until(at)) != nil {
			break
		}
		wg.Go(func() { results[i] = do(ctx, hc, t) })
	}
	wg.Wait()
	return results, time.Since(t0)
}

// get sends one request.
func get(ctx context.Context, base, path string) Result {
	hc := newClient(1)
	defer hc.CloseIdleConnections()
	return do(ctx, hc, Target{Base: base, Path: path})
}

// do sends one request. Product reads go through client/, as a service
// calling the API would, with retries off: the lab measures what the
// service answers to each request, and a retry would hide a refusal.
func do(ctx context.Context, hc *http.Client, t Target) Result {
	if id, ok := productID(t.Path); ok {
		return getProduct(ctx, hc, t.Base, id)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.Base+t.Path, nil)
	if err != nil {
		return Result{Err: err.Error()}
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return Result{Latency: time.Since(start), Err: shortErr(err)}
	}
	r, _ := answered(resp, start)
	return r
}

// answered reads resp's whole body and reports it as a Result timed from
// start, returning the body too.
func answered(resp *http.Response, start time.Time) (Result, []byte) {
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	r := Result{
		Status:     resp.StatusCode,
		XCache:     resp.Header.Get("X-Cache"),
		RetryAfter: resp.Header.Get("Retry-After") != "",
		Latency:    time.Since(start),
		Body:       string(body[:min(len(body), 512)]),
	}
	if err != nil {
		r.Err = shortErr(err)
	}
	return r, body
}

// oneShot is the lab's client policy: one attempt, bounded by the lab's
// own clientTimeout rather than the client's shorter default.
var oneShot = client.RetryPolicy{MaxAttempts: 1, AttemptTimeout: clientTimeout, MaxElapsed: clientTimeout}

// getProduct reads one product through client/ and reports it as a Result.
func getProduct(ctx context.Context, hc *http.Client, base string, id int64) Result {
	api, err := client.New(base, client.WithHTTPClient(hc), client.WithRetry(oneShot))
	if err != nil {
		return Result{Err: err.Error()}
	}
	start := time.Now()
	p, cache, err := api.GetProduct(ctx, id)
	r := Result{Latency: time.Since(start), XCache: string(cache)}
	var ae *client.APIError
	switch {
	case err == nil:
		b, _ := json.Marshal(p) // plain fields: cannot fail
		r.Status, r.Body = http.StatusOK, string(b)
	case errors.As(err, &ae):
		r.Status, r.Body = ae.Status, ae.Message
		r.XCache, r.RetryAfter = ae.Header.Get("X-Cache"), ae.Header.Get("Retry-After") != ""
	default:
		r.Err = shortErr(err)
	}
	return r
}

// productID parses "/products/<id>".
func productID(path string) (int64, bool) {
	rest, ok := strings.CutPrefix(path, "/products/")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	return id, err == nil && id > 0
}

// shortErr names a client-side failure without the URL or the addresses
// (a raw connection's error names its own port), so equal failures group
// together in the summary.
func shortErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return "client timeout"
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Op + ": " + oe.Err.Error()
	}
	return err.Error()
}
