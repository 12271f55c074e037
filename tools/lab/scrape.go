package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/stampede-guard/api/internal/testkit/metricstext"
)

// scrape reads one instance's /metrics and returns every sample whose
// name starts with prefix, keyed by name{labels}.
func scrape(ctx context.Context, base, prefix string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %s", base, resp.Status)
	}
	exp, err := metricstext.Parse(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s/metrics: %w", base, err)
	}
	return exp.Values(prefix), nil
}

// scrapeSum adds up the stampede_* samples of every instance: what the
// service says it did, to set beside what PostgreSQL counted.
func scrapeSum(ctx context.Context, bases []string) map[string]float64 {
	sum := map[string]float64{}
	for _, b := range bases {
		m, err := scrape(ctx, b, "stampede_")
		if err != nil {
			continue
		}
		for k, v := range m {
			if strings.HasPrefix(k, "stampede_db_pool_connections") || strings.HasPrefix(k, "stampede_breaker_state") {
				continue // gauges of a moment, not totals
			}
			sum[k] += v
		}
	}
	return sum
}

// sampler polls one gauge on every instance while a load runs and keeps the
// highest value seen on any one of them.
type sampler struct {
	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex // guards peak and n
	peak float64
	n    int
}

func sample(ctx context.Context, bases []string, key string, every time.Duration) *sampler {
	s := &sampler{stop: make(chan struct{})}
	prefix, _, _ := strings.Cut(key, "{")
	s.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			for _, b := range bases {
				if m, err := scrape(ctx, b, prefix); err == nil {
					s.mu.Lock()
					s.peak = max(s.peak, m[key])
					s.n++
					s.mu.Unlock()
				}
			}
			select {
			case <-s.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return s
}

// done stops sampling and returns the peak and how many samples it took.
func (s *sampler) done() (peak float64, samples int) {
	close(s.stop)
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.n
}
