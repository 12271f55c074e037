package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/stampede-guard/api/internal/testkit/netproxy"
)

// linkEnv, set in the lab's own environment, makes the lab binary serve one
// link (to the host:port it names) instead of running experiments; with
// linkPGEnv true it counts PostgreSQL Execute messages too.
const (
	linkEnv   = "LAB_LINK_TARGET"
	linkPGEnv = "LAB_LINK_PG"
)

// linkHello is the link process's first line on stdout: where the app
// dials, and where the lab controls it.
type linkHello struct {
	Addr    string `json:"addr"`
	Control string `json:"control"`
}

// runLink is the link process: a netproxy.Proxy to target and a loopback
// control endpoint (POST /delay v=duration, POST /down v=bool, GET /stats),
// until its stdin closes (the lab closed it, or died).
func runLink(target string, pg bool) error {
	var executes, lastExecute atomic.Int64
	var opts netproxy.Options
	if pg {
		opts.Observe = func() func([]byte) {
			var mine atomic.Int64 // this link's: another's Execute must not date this one
			feed := netproxy.CountPGExecutes(&mine)()
			return func(b []byte) {
				before := mine.Load()
				feed(b)
				if n := mine.Load() - before; n > 0 {
					executes.Add(n)
					lastExecute.Store(time.Now().UnixNano())
				}
			}
		}
	}
	p, err := netproxy.New(target, opts)
	if err != nil {
		return err
	}
	defer p.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /delay", func(w http.ResponseWriter, r *http.Request) {
		d, err := time.ParseDuration(r.FormValue("v"))
		if err != nil || d < 0 {
			http.Error(w, "v: want a duration ≥ 0", http.StatusBadRequest)
			return
		}
		p.SetDelay(d)
	})
	mux.HandleFunc("POST /down", func(w http.ResponseWriter, r *http.Request) {
		down, err := strconv.ParseBool(r.FormValue("v"))
		if err != nil {
			http.Error(w, "v: want true or false", http.StatusBadRequest)
			return
		}
		p.SetDown(down)
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		s := p.Stats()
		_ = json.NewEncoder(w).Encode(ProxyStats{Conns: s.Conns, Refused: s.Refused, Executes: executes.Load(), LastExecute: lastExecute.Load()})
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	if err := json.NewEncoder(os.Stdout).Encode(linkHello{Addr: p.Addr(), Control: ln.Addr().String()}); err != nil {
		return fmt.Errorf("hello: %w", err)
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // until the lab closes it or exits
	return nil
}
