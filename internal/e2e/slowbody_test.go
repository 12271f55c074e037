package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSlowBodiesHoldNoSlot: 10 clients that trickle their request bodies
// (one byte per 100 ms, reconnecting when cut off) against a critical class
// of 3 concurrency slots; checkout from other clients meanwhile keeps at
// least 99 % success. Without ReadBody ahead of the limit, the trickling
// requests hold the 3 slots and checkout answers 503.
func TestSlowBodiesHoldNoSlot(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env["CONCURRENCY_CRITICAL"] = "3"
	base, _ := startApp(t, env)
	addr := strings.TrimPrefix(base, "http://")

	ctx, stop := context.WithCancel(context.Background())
	var slow sync.WaitGroup
	var started sync.WaitGroup
	var connects atomic.Int64
	for i := range 10 {
		started.Add(1)
		slow.Go(func() { trickle(ctx, addr, i, &started, &connects) })
	}
	started.Wait()
	time.Sleep(200 * time.Millisecond) // the trickling requests are in the chain

	// Two checkout clients, one request in flight each: they alone never
	// need more than the 3 slots. They keep going for at least 2 s, so the
	// slow clients are cut off and come back several times meanwhile.
	const workers, each = 2, 100
	var ok, failed atomic.Int64
	statuses := sync.Map{}
	var wg sync.WaitGroup
	until := time.Now().Add(2 * time.Second)
	for w := range workers {
		wg.Go(func() {
			for i := 0; i < each || time.Now().Before(until); i++ {
				body := fmt.Sprintf(`{"product_id":%d,"quantity":1}`, 300+w*each+i%each)
				resp, _, err := send("POST", base+"/orders", nil, body)
				if err == nil && resp.StatusCode == http.StatusCreated {
					ok.Add(1)
					continue
				}
				failed.Add(1)
				if err == nil {
					n, _ := statuses.LoadOrStore(resp.StatusCode, new(atomic.Int64))
					n.(*atomic.Int64).Add(1)
				}
			}
		})
	}
	wg.Wait()
	stop()
	slow.Wait()

	total := ok.Load() + failed.Load()
	var refused []string
	statuses.Range(func(k, v any) bool {
		refused = append(refused, fmt.Sprintf("%v×%d", k, v.(*atomic.Int64).Load()))
		return true
	})
	if ok.Load()*100 < total*99 {
		t.Errorf("checkout beside 10 slow-body clients: %d of %d succeeded (refused: %v), want ≥ 99 %%", ok.Load(), total, refused)
	}
	t.Logf("checkout: %d/%d ok; slow clients connected %d times", ok.Load(), total, connects.Load())
}

// trickle sends POST /orders with a 1000-byte Content-Length and then one
// byte every 100 ms, reconnecting whenever the server cuts it off, until
// ctx ends. started is released after its first request's headers are out.
func trickle(ctx context.Context, addr string, i int, started *sync.WaitGroup, connects *atomic.Int64) {
	first := true
	defer func() {
		if first {
			started.Done()
		}
	}()
	for ctx.Err() == nil {
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return
		}
		connects.Add(1)
		stopOnDone := context.AfterFunc(ctx, func() { conn.Close() })
		_, err = fmt.Fprintf(conn, "POST /orders HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nIdempotency-Key: slow-%d\r\n\r\n{", addr, i)
		if first {
			first = false
			started.Done()
		}
		for err == nil && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			_, err = conn.Write([]byte(" "))
		}
		stopOnDone()
		conn.Close()
	}
}

// TestOversizedContentLengthBefore100Continue: a Content-Length over the
// body limit with Expect: 100-continue answers 413 at once; the client is
// never invited to send the body.
func TestOversizedContentLengthBefore100Continue(t *testing.T) {
	t.Parallel()
	base, _ := startApp(t, testEnv(t))
	addr := strings.TrimPrefix(base, "http://")
	for _, path := range []string{"/orders", "/products"} {
		t.Run(path, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
				"Authorization: Bearer %s\r\nContent-Length: 10737418240\r\nExpect: 100-continue\r\n\r\n", path, addr, testAPIKey)
			status, err := bufio.NewReader(conn).ReadString('\n')
			if err != nil {
				t.Fatalf("read status line: %v", err)
			}
			if !strings.HasPrefix(status, "HTTP/1.1 413") {
				t.Errorf("first answer: got %q, want HTTP/1.1 413 (never 100 Continue)", strings.TrimSpace(status))
			}
		})
	}
}

// TestRefusalBeforeTheBodyIsAnsweredAtOnce: a write refused before its
// body is read (here 401: a product write with no API key, an order with a
// made-up one) is answered while the client is still sending the body. net/http reads what is left of a body before it
// sends the answer, so a client trickling 6 KB heard nothing until the
// server's read timeout cut the connection, 10 s later; the answer now
// closes the connection instead.
func TestRefusalBeforeTheBodyIsAnsweredAtOnce(t *testing.T) {
	t.Parallel()
	base, _ := startApp(t, testEnv(t))
	for _, tc := range []struct{ name, request string }{
		{"a product write without a key", "POST /products HTTP/1.1\r\n"},
		// Its key was checked after the body: 408 once the body was late.
		{"an order with a made-up key", "POST /orders HTTP/1.1\r\nAuthorization: Bearer made-up-key-0123456789\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// Headers and the first bytes of a 6000-byte body; the rest never comes.
			if _, err := fmt.Fprintf(conn, "%sHost: test\r\nContent-Type: application/json\r\nContent-Length: 6000\r\n\r\n{\"name", tc.request); err != nil {
				t.Fatal(err)
			}
			const within = 3 * time.Second // the server's read timeout is 10 s
			_ = conn.SetReadDeadline(time.Now().Add(within))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer within %v to a write refused before its body arrived: %v", within, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
				t.Errorf("got %d (closing the connection: %v), want 401 and the connection closed", resp.StatusCode, resp.Close)
			}
		})
	}
}
