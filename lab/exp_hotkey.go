package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/internal/server"
)

// Hot-key throughput: rounds of hotKeyFor per target, each round running
// every target back to back (in an order that rotates), so a stack is
// compared with the bare handler measured a few seconds from it. The ratio
// is the median of the rounds' ratios: on a shared machine, throughput
// drifts by a third and more within a minute, which medians of throughput
// taken a minute apart (the earlier method) turned into ±0.07 in the ratio.
const (
	hotKeyRounds     = 18
	hotKeyLeanRounds = 6
	hotKeyFor        = time.Second
	hotKeyWorkers    = 32
)

// hotKey measures what the whole stack costs on its hottest path: one
// product answered from L1, against a bare handler that answers the same
// bytes with no middleware, no cache and no database, with the rate limiter
// off and on (a limit never reached, so every request is counted).
func (l *Lab) hotKey(ctx context.Context) *Experiment {
	x := &Experiment{Name: "hot-key", Title: "one hot key through the full stack vs a bare handler",
		Setup: fmt.Sprintf("1 instance, L1_TTL=1s, LOG_LEVEL=info (the access log is written); %d closed-loop workers "+
			"GET /products/1 for %s per target in each of %d rounds (every target back to back, the order rotating); "+
			"× bare is the median of the rounds' ratios; the bare handler is a "+
			"gin route in a process of its own returning the product's body, on the service's http.Server (internal/server: "+
			"its read, write and idle timeouts); the last row, for the record, is the same handler with only a header timeout; "+
			"the client shares the machine's cores", hotKeyWorkers, hotKeyFor, hotKeyRounds),
		Expect:  "full stack ≥ 0.85× the bare handler's requests/s with the limiter off, ≥ 0.7× with it on",
		Columns: []string{"target", "requests/s (range of rounds)", "median", "× bare (median of rounds)", "p99 (median round)"}}
	stacks := []struct{ label, rate string }{
		{"full stack, RATE_LIMIT=off", "off"},
		{"full stack, limiter on (100000000-S)", "100000000-S"},
	}
	bases := make([]string, len(stacks))
	for i, s := range stacks {
		c, err := l.StartCluster(ctx, "hot-key-"+slug(s.rate), 1, map[string]string{
			"L1_TTL": "1s", "RATE_LIMIT": s.rate, "RATE_LIMIT_KEY": "off",
		}, false)
		if err != nil {
			return x.fail(err)
		}
		defer func() {
			c.Stop()
			_, _ = c.Close(context.Background())
		}()
		bases[i] = c.Bases()[0]
	}
	body := get(ctx, bases[0], "/products/1")
	if body.Status != http.StatusOK {
		return x.fail(fmt.Errorf("GET /products/1: %d %s", body.Status, body.Err))
	}
	bare, stop, err := serveBare(ctx, body.Body, bareAsService)
	if err != nil {
		return x.fail(err)
	}
	defer stop()
	plain, stopPlain, err := serveBare(ctx, body.Body, barePlain)
	if err != nil {
		return x.fail(err)
	}
	defer stopPlain()
	// The plain bare handler comes last, for the record only: the checks
	// compare the stacks with the bare handler on the service's server.
	targets := append(append([]string{bare}, bases...), plain)
	labels := []string{"bare gin handler"}
	for _, s := range stacks {
		labels = append(labels, s.label)
	}
	labels = append(labels, "bare gin handler, header timeout only")
	rounds := make([][]hotKeyRound, len(targets))
	for r := range hotKeyRounds {
		for k := range targets {
			i := (k + r) % len(targets) // who goes first rotates
			rounds[i] = append(rounds[i], netHTTPRound(ctx, targets[i]+"/products/1"))
		}
	}
	medians := make([]hotKeyRound, len(targets))
	ratios := make([]float64, len(targets))
	for i := range targets {
		medians[i] = medianRound(rounds[i])
		ratios[i] = pairedRatio(rounds[i], rounds[0])
		lo, hi := rpsRange(rounds[i])
		x.Table = append(x.Table, []string{labels[i], fmt.Sprintf("%.0f–%.0f", lo, hi), fmt.Sprintf("%.0f", medians[i].rps),
			fmt.Sprintf("%.2f×", ratios[i]), fmtMs(ms(medians[i].p99))})
	}
	off, on := ratios[1], ratios[2]
	x.check(off >= 0.85, "limiter off: %.2f× the bare handler (want ≥ 0.85×)", off)
	x.check(on >= 0.7, "limiter on: %.2f× the bare handler (want ≥ 0.7×)", on)

	// For the record: the same comparison with a lean client (rawconn.go,
	// as wrk drives a server). net/http's client costs more CPU per request
	// than the stack does, and on shared cores that cost is paid alike for
	// every target, which pulls every ratio toward 1; a lean client leaves
	// the servers most of the cores, so its ratio is nearer the ratio of CPU
	// per request.
	lean := make([][]hotKeyRound, 3) // bare, off, on
	for r := range hotKeyLeanRounds {
		for k := range lean {
			i := (k + r) % len(lean)
			lean[i] = append(lean[i], closedLoop(ctx, hotKeyWorkers, hotKeyFor, viaRawConn(targets[i], "/products/1")))
		}
	}
	for i := range lean {
		m := medianRound(lean[i])
		lo, hi := rpsRange(lean[i])
		x.Table = append(x.Table, []string{labels[i] + ", lean client", fmt.Sprintf("%.0f–%.0f", lo, hi), fmt.Sprintf("%.0f", m.rps),
			fmt.Sprintf("%.2f×", pairedRatio(lean[i], lean[0])), fmtMs(ms(m.p99))})
	}
	x.note("the lean-client rows (%d rounds, no check) show the same stacks driven as wrk would drive them: limiter off %.2f×, on %.2f× "+
		"the bare handler; the goals are checked with net/http's client, which shares the cores as a service calling the API would",
		hotKeyLeanRounds, pairedRatio(lean[1], lean[0]), pairedRatio(lean[2], lean[0]))
	for i, r := range medians {
		x.check(r.failed == 0, "%s: %d requests failed in the median round", labels[i], r.failed)
	}
	return x
}

// hotKeyRound is one closed-loop run against one target.
type hotKeyRound struct {
	rps    float64
	p99    time.Duration
	failed int
}

// netHTTPRound is one round of the checked estimator: the workers share
// one net/http client, as a service's goroutines share theirs.
func netHTTPRound(ctx context.Context, url string) hotKeyRound {
	hc := newClient(hotKeyWorkers)
	defer hc.CloseIdleConnections()
	return closedLoop(ctx, hotKeyWorkers, hotKeyFor, viaNetHTTP(hc, url))
}

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
		return func(context.Context) (bool, time.Duration) {
			r := rc.get(path)
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

// pairedRatio is the median over rounds of a's throughput ÷ b's in the same
// round.
func pairedRatio(a, b []hotKeyRound) float64 {
	rs := make([]float64, 0, len(a))
	for r := range min(len(a), len(b)) {
		if b[r].rps > 0 {
			rs = append(rs, a[r].rps/b[r].rps)
		}
	}
	if len(rs) == 0 {
		return 0
	}
	slices.Sort(rs)
	return rs[len(rs)/2]
}

// rpsRange is the lowest and highest throughput of the rounds.
func rpsRange(rs []hotKeyRound) (lo, hi float64) {
	for i, r := range rs {
		if i == 0 || r.rps < lo {
			lo = r.rps
		}
		hi = max(hi, r.rps)
	}
	return lo, hi
}

// medianRound is the round with the median throughput.
func medianRound(rs []hotKeyRound) hotKeyRound {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b hotKeyRound) int { return cmp.Compare(a.rps, b.rps) })
	return s[len(s)/2]
}

// bareEnv, set in the lab's own environment, makes the lab binary serve
// the bare handler instead of running experiments (see main): a process of
// its own, as the service is, so neither shares a Go runtime with the
// load generator.
const (
	bareEnv     = "LAB_BARE_BODY"
	bareModeEnv = "LAB_BARE_SERVER"
)

// serveBare starts the lab binary again as the bare handler, answering
// every GET /products/:id with body under the server mode names, and
// returns its base URL.
func serveBare(ctx context.Context, body, mode string) (base string, stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.CommandContext(ctx, self) // #nosec G204 -- the lab re-runs itself
	cmd.Env = append(os.Environ(), bareEnv+"="+body, bareModeEnv+"="+mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("bare handler: %w", err)
	}
	return "http://" + strings.TrimSpace(line), stop, nil
}

// runBare is the bare handler's process: gin with one route and nothing
// else, on a loopback port it prints, until killed; mode is bareAsService
// or barePlain.
func runBare(body, mode string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr())
	b := []byte(body)
	gin.SetMode(gin.ReleaseMode)
	engine := gin.New()
	engine.GET("/products/:id", func(c *gin.Context) {
		c.Header("X-Cache", "HIT")
		c.Data(http.StatusOK, "application/json; charset=utf-8", b)
	})
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
