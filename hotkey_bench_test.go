package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/db/dbtest"
)

// BenchmarkHotKey measures one hot product read end to end over loopback
// HTTP, side by side: a bare gin handler answering the same body, the full
// stack with the rate limiter off, and with it on (a limit never reached,
// so every request is counted: leases make that cost no Redis round trip).
// Compare ns/op: BENCHMARKS.md gives the command and the ratios.
func BenchmarkHotKey(b *testing.B) {
	dbURL := dbtest.NewDatabase(b, "bench")
	body := []byte(`{"id":1,"name":"x","price_cents":1}`)
	bare := gin.New()
	bare.GET("/products/:id", func(c *gin.Context) {
		c.Header("X-Cache", "HIT")
		c.Data(http.StatusOK, "application/json", body)
	})
	srv := httptest.NewServer(bare)
	b.Cleanup(srv.Close)
	targets := []struct{ name, base string }{{"bare handler", srv.URL}}
	for _, rate := range []string{"off", "100000000-S"} {
		targets = append(targets, struct{ name, base string }{"limiter " + map[string]string{"off": "off"}[rate] + map[bool]string{true: "on"}[rate != "off"],
			benchApp(b, map[string]string{
				"DATABASE_URL": dbURL, "REDIS_URL": dbtest.RedisDBURL(redisDB), "CACHE_NAMESPACE": "bench" + dbtest.Unique(),
				"RATE_LIMIT": rate, "RATE_LIMIT_KEY": "off", "ADMIN_ADDR": "off", "HTTP_ADDR": "127.0.0.1:0",
			})})
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) {
			url := tg.base + "/products/1"
			if resp, err := hc.Get(url); err != nil || resp.StatusCode != http.StatusOK {
				b.Fatalf("warm-up GET %s: %v", url, err)
			} else {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := hc.Get(url)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
		})
	}
}

// benchApp runs the service for a benchmark and returns its base URL.
func benchApp(b *testing.B, env map[string]string) string {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &listenWatch{addr: make(chan string, 1)}
	done := make(chan error, 1)
	go func() { done <- run(ctx, envOf(env), w) }()
	b.Cleanup(func() { cancel(); <-done })
	select {
	case a := <-w.addr:
		return "http://" + a
	case err := <-done:
		b.Fatalf("run: %v", err)
	case <-time.After(listenWait):
		b.Fatal("not listening")
	}
	return ""
}

// listenWatch is a log sink that reports the "listening" address and
// otherwise discards, so logging costs what it costs in production.
type listenWatch struct {
	once sync.Once
	addr chan string
}

func (w *listenWatch) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"msg":"listening"`)) {
		var rec struct{ Addr string }
		if json.Unmarshal(p, &rec) == nil {
			w.once.Do(func() { w.addr <- rec.Addr })
		}
	}
	return len(p), nil
}
