package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
)

// BenchmarkHotKey measures one hot product read end to end over loopback
// HTTP, side by side: a bare gin handler answering the same body, the full
// stack with the rate limiter off, and with it on (a limit never reached,
// so every request is counted: leases make that cost no Redis round trip).
// Compare ns/op: docs/benchmarks.md gives the command and the ratios.
func BenchmarkHotKey(b *testing.B) {
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
			launchApp(b, testEnv(b, map[string]string{
				// The deployment's L1 and write keys; the rate under test.
				"L1_TTL": "", "API_KEYS": "", "RATE_LIMIT": rate, "ADMIN_ADDR": "off",
			}), quietLog()).waitListening()})
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
