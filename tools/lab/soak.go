package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The soak's service settings: REQUEST_TIMEOUT is the deadline the clients
// hold the service to, with soakMargin for the answer to travel (the
// client's own timeout); the rest is every app default but a small pool
// (PostgreSQL's 100 connections are shared with other work on the machine)
// and no rate limit (all clients are one IP).
const (
	soakRequestTimeout = 5 * time.Second
	soakMargin         = 2 * time.Second
	soakInstances      = 3
	soakSampleEvery    = 10 * time.Second
	soakAPIKey         = "soak-write-key-not-a-secret"
)

var soakEnv = map[string]string{
	"REQUEST_TIMEOUT":      soakRequestTimeout.String(),
	"API_KEYS":             soakAPIKey,
	"L1_TTL":               "1s",
	"DB_MAIN_MAX_CONNS":    "6",
	"DB_REPORTS_MAX_CONNS": "2",
}

// soak is one soak run: three instances under the mixed load while the
// faults rotate, sampled every soakSampleEvery.
type soak struct {
	lab     *Lab
	cluster *Cluster
	fleet   *fleet
	start   time.Time
	kills   int
}

// soakReport is what the run writes to soak.json.
type soakReport struct {
	Minutes float64       `json:"minutes"`
	Rate    float64       `json:"rate"`
	Mins    []minuteStats `json:"per_minute"`
	Samples []soakSample  `json:"samples"`
	Faults  []faultEvent  `json:"faults"`
	Orders  orderCheck    `json:"orders"`
	Verdict []string      `json:"failures"`
}

// runSoak runs the soak for d at rate requests a second and writes its
// table, soak.json and soak.svg into out. It fails when the verdict does.
func (l *Lab) runSoak(ctx context.Context, d time.Duration, rate float64, out string) error {
	c, err := l.StartCluster(ctx, "soak", soakInstances, soakEnv, true)
	if err != nil {
		return err
	}
	defer func() { _, _ = c.Close(context.Background()) }()
	s := &soak{lab: l, cluster: c, fleet: newFleet(c), start: time.Now()}
	_, portStr, _ := net.SplitHostPort(l.redisProxy.Addr())
	redisPort, _ := strconv.Atoi(portStr)
	t := &traffic{fleet: s.fleet, book: newBook(s.start, d), ledger: newLedger(), apiKey: soakAPIKey,
		prefix: "soak-" + randomHex(4) + "-", rate: rate,
		hc: &http.Client{Timeout: soakRequestTimeout + soakMargin, Transport: &http.Transport{
			MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second, DisableCompression: true}}}
	defer t.hc.CloseIdleConnections()
	fmt.Fprintf(l.stdout, "soak: %s, %d instances, %.0f requests/s, a fault every %s, REQUEST_TIMEOUT=%s (client gives up at +%s)\n",
		d, soakInstances, rate, faultPeriod(d), soakRequestTimeout, soakMargin)

	var wg sync.WaitGroup
	var mu sync.Mutex
	var events []faultEvent
	var samples []soakSample
	wg.Go(func() { t.run(ctx, d) })
	wg.Go(func() { s.rotate(ctx, d, &t.fault, &mu, &events) })
	wg.Go(func() { s.sampleEvery(ctx, d, redisPort, &mu, &samples) })
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}

	oc, err := t.ledger.check(ctx, l.pg, c.DB, t.prefix)
	if err != nil {
		return err
	}
	rep := soakReport{Minutes: d.Minutes(), Rate: rate, Mins: t.book.minutes(), Samples: samples, Faults: events, Orders: oc}
	rep.judge()
	if err := rep.write(l.stdout, out); err != nil {
		return err
	}
	if len(rep.Verdict) > 0 {
		return errors.New("soak failed")
	}
	return nil
}

// sampleEvery samples every instance each soakSampleEvery until the run ends.
func (s *soak) sampleEvery(ctx context.Context, d time.Duration, redisPort int, mu *sync.Mutex, samples *[]soakSample) {
	for at := s.start; ; at = at.Add(soakSampleEvery) {
		if sleepCtx(ctx, time.Until(at)) != nil || time.Since(s.start) > d+time.Second {
			return
		}
		sm := soakSample{AtMin: time.Since(s.start).Minutes()}
		for i := range soakInstances {
			sm.Inst = append(sm.Inst, sampleInstance(ctx, s.fleet, i, redisPort))
		}
		mu.Lock()
		*samples = append(*samples, sm)
		mu.Unlock()
	}
}

// judge fills in the verdict: the rules of verdict, and every fault that
// could not be staged.
func (r *soakReport) judge() {
	tot := totals(r.Mins)
	o := soakOutcome{Minutes: r.Minutes, ServerErrors: tot.ServerErr, Unanswered: tot.Unanswered,
		Lost: r.Orders.Lost, Duplicated: r.Orders.Duplicated}
	o.RSS, o.Gor, o.FD = lives(r.Samples)
	r.Verdict = verdict(o)
	for _, e := range r.Faults {
		if e.Err != "" {
			r.Verdict = append(r.Verdict, fmt.Sprintf("fault %q at %.1f min was not staged: %s", e.Name, e.AtMin, e.Err))
		}
	}
}

// lives splits the samples into one series per instance process for RSS,
// goroutines and open fds.
func lives(samples []soakSample) (rss, gor, fd []life) {
	type key struct{ slot, life int }
	idx := map[key]int{}
	for _, sm := range samples {
		for slot, in := range sm.Inst {
			k := key{slot, in.Life}
			i, ok := idx[k]
			if !ok {
				name := fmt.Sprintf("instance %d", slot)
				if in.Life > 1 {
					name += fmt.Sprintf(" (restart %d)", in.Life-1)
				}
				i = len(rss)
				idx[k] = i
				rss, gor, fd = append(rss, life{Name: name}), append(gor, life{Name: name}), append(fd, life{Name: name})
			}
			rss[i].Points = append(rss[i].Points, point{sm.AtMin, float64(in.RSSMiB)})
			gor[i].Points = append(gor[i].Points, point{sm.AtMin, float64(in.ownGoroutines())})
			fd[i].Points = append(fd[i].Points, point{sm.AtMin, float64(in.ownFDs())})
		}
	}
	return rss, gor, fd
}
