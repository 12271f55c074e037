package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/stampede-guard/api/client"
)

// rawConn is one keep-alive HTTP/1.1 connection a burst drives by hand, as
// wrk does: write the request, read the answer, on the request's own
// goroutine. Through net/http's transport (two goroutines per connection and
// a hand-off each way) and client/'s decoding, the lab's own CPU was half of
// a burst's on this 2-core machine, and the tail of 200 concurrent reads
// measured the load generator: median p99 over 40 rounds 15 ms through
// client/, 8 ms raw, against the same five instances in one run. A product
// answer is still decoded as client/ decodes it, after the clock stops
// (checkProduct).
type rawConn struct {
	c    net.Conn
	br   *bufio.Reader
	host string
}

// dialRaw opens a connection to base and sends GET warmPath on it, so the
// server has accepted it and its goroutine is ready before the load.
func dialRaw(ctx context.Context, base, warmPath string) (*rawConn, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	rc := &rawConn{c: c, br: bufio.NewReader(c), host: u.Host}
	if r := rc.get(ctx, warmPath); r.Err != "" || r.Status != http.StatusOK {
		_ = c.Close()
		return nil, fmt.Errorf("warming a connection to %s: %d %s", base, r.Status, r.Err)
	}
	return rc, nil
}

// get sends GET path and reads the whole answer, within clientTimeout and
// ctx's deadline; a ctx already done sends nothing.
func (rc *rawConn) get(ctx context.Context, path string) Result {
	r, _ := rc.getBody(ctx, path)
	return r
}

// getBody is get, also returning the whole body.
func (rc *rawConn) getBody(ctx context.Context, path string) (Result, []byte) {
	start := time.Now()
	deadline := start.Add(clientTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = rc.c.SetDeadline(deadline)
	// After the deadline is set: a cancellation that set it to "now" a
	// moment earlier must not be undone by it.
	if err := ctx.Err(); err != nil {
		return Result{Err: shortErr(err)}, nil
	}
	if _, err := io.WriteString(rc.c, "GET "+path+" HTTP/1.1\r\nHost: "+rc.host+"\r\nAccept: application/json\r\n\r\n"); err != nil {
		return Result{Latency: time.Since(start), Err: shortErr(err)}, nil
	}
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		return Result{Latency: time.Since(start), Err: shortErr(err)}, nil
	}
	return answered(resp, start)
}

// checkProduct decodes a 200 product answer as client/ would, and turns one
// that is not a product into a failure.
func checkProduct(r *Result, body []byte) {
	if r.Status != http.StatusOK || r.Err != "" {
		return
	}
	var p client.Product
	err := json.Unmarshal(body, &p)
	if err == nil && p.ID <= 0 {
		err = errors.New("no id")
	}
	if err != nil {
		r.Status, r.Err = 0, "answer is not a product: "+err.Error()
	}
}
