package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/internal/server"
)

// bareEnv, set in the lab's own environment, makes the lab binary serve
// the bare handler instead of running experiments (see main): a process of
// its own, as the service is, so neither shares a Go runtime with the
// load generator.
const (
	bareEnv     = "LAB_BARE_BODY"
	bareModeEnv = "LAB_BARE_SERVER"
	bareWaitEnv = "LAB_BARE_WAIT" // a duration: answer as a perfect single-flight of that long (flightWait)
	// A Redis host:port: read the product's key in the lab's logical
	// database first, and answer 503 + Retry-After when it is absent — a
	// refusal as cheap as one that must look in the cache can be.
	bareRedisEnv = "LAB_BARE_REDIS"
)

// serveBare starts the lab binary again as the bare handler, answering
// every GET /products/:id with body under the server mode names, and
// returns its base URL.
func serveBare(ctx context.Context, body, mode string) (base string, stop func(), err error) {
	return serveBareEnv(ctx, body, mode)
}

// serveBareEnv is serveBare with more of the child's environment (e.g.
// bareWaitEnv).
func serveBareEnv(ctx context.Context, body, mode string, env ...string) (base string, stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.CommandContext(ctx, self) // #nosec G204 -- the lab re-runs itself
	cmd.Env = append(append(os.Environ(), bareEnv+"="+body, bareModeEnv+"="+mode), env...)
	// Its stdin closes when the lab exits, however it exits, or calls
	// stop: the handler then stops (runBare), as the links do.
	in, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() { _ = in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() }
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("bare handler: %w", err)
	}
	return "http://" + strings.TrimSpace(line), stop, nil
}

// runBare is the bare handler's process: gin with one route and nothing
// else, on a loopback port it prints, until killed or its stdin closes; mode is bareAsService
// or barePlain; redisAddr, when set, makes each answer wait for a GET (bareRedisEnv).
func runBare(body, mode string, wait time.Duration, redisAddr string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr())
	go func() { // the lab closed our stdin, or died: stop
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	b := []byte(body)
	gin.SetMode(gin.ReleaseMode)
	engine := gin.New()
	// A burst warms each connection on /healthz before its barrier (Burst).
	engine.GET("/healthz", func(c *gin.Context) { c.Status(http.StatusOK) })
	if redisAddr != "" {
		rdb, err := bareRedis(redisAddr)
		if err != nil {
			return err
		}
		defer func() { _ = rdb.Close() }()
		engine.GET("/products/:id", bareLookup(rdb))
		return serveBareEngine(engine, ln, mode)
	}
	flight := newFlightWait(wait)
	engine.GET("/products/:id", func(c *gin.Context) {
		flight.wait(c.Param("id"))
		c.Header("X-Cache", "HIT")
		c.Data(http.StatusOK, "application/json; charset=utf-8", b)
	})
	return serveBareEngine(engine, ln, mode)
}

// bareLookupKey is where the Redis floor looks for product id: a key of the
// lab's own, never written, so every lookup misses as a cold burst does.
func bareLookupKey(id string) string { return "lab:bare:product:" + id }

// bareLookup answers with what Redis holds for the product, and a 503 with
// Retry-After when it holds nothing (or cannot be read): one GET, then the
// refusal, and no middleware, logging, gate or lock.
func bareLookup(rdb *redis.Client) gin.HandlerFunc {
	return func(c *gin.Context) {
		v, err := rdb.Get(c.Request.Context(), bareLookupKey(c.Param("id"))).Bytes()
		if err != nil {
			c.Header("Retry-After", "1")
			c.Data(http.StatusServiceUnavailable, "application/json; charset=utf-8", []byte(`{"error":"temporarily unavailable, retry later"}`))
			return
		}
		c.Data(http.StatusOK, "application/json; charset=utf-8", v)
	}
}

// bareRedisConns is the Redis floor's pool: every connection dialled
// before the burst. Sizes from 8 to 256 moved its median refusal within
// this machine's noise (docs/benchmarks.md); what did cost was dialling
// during the burst, as go-redis's lazy default pool does.
const bareRedisConns = 64

// bareRedis is the Redis floor's client, its whole pool open before the
// first request: no GET waits for a dial.
func bareRedis(addr string) (*redis.Client, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: redisDB, PoolSize: bareRedisConns, MaxIdleConns: bareRedisConns})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Each held at once, so each is a connection of its own; closing one
	// puts it back in the pool, open.
	held := make([]*redis.Conn, 0, bareRedisConns)
	var err error
	for range bareRedisConns {
		cn := rdb.Conn()
		held = append(held, cn)
		if err = cn.Ping(ctx).Err(); err != nil {
			break
		}
	}
	for _, cn := range held {
		_ = cn.Close()
	}
	if err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("redis floor: dial %s: %w", addr, err)
	}
	return rdb, nil
}

// serveBareEngine serves engine on ln as mode says.
func serveBareEngine(engine *gin.Engine, ln net.Listener, mode string) error {
	if mode == bareAsService {
		// The service's own server: its timeouts cost a few deadline
		// updates per request, a protection rather than the middleware
		// under test, so the bare handler pays them too.
		return server.New(engine, bareWriteTimeout, nil).Serve(ln)
	}
	srv := &http.Server{Handler: engine, ReadHeaderTimeout: server.ReadHeaderTimeout}
	return srv.Serve(ln)
}

// How the bare handler serves: under the service's http.Server (what the
// stack is compared with), or under one with only a header timeout (for
// the record: what those timeouts cost).
const (
	bareAsService = "service"
	barePlain     = "plain"
)

// bareWriteTimeout stands for the service's HTTP_WRITE_TIMEOUT: any value
// costs the same per request.
const bareWriteTimeout = 15 * time.Second
