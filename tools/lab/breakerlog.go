package main

import (
	"bufio"
	"encoding/json"
	"os"
	"time"
)

// breakerTransition is one "breaker state" line of an instance's log.
type breakerTransition struct {
	At       time.Time
	From, To string
}

// breakerLog reads, from each instance's own JSON log, the transitions of
// the breaker named name (e.g. "redis"), with the instance's own
// timestamps: a recovery window measured from them does not include the
// lab's polling interval.
func (c *Cluster) breakerLog(name string) ([][]breakerTransition, error) {
	out := make([][]breakerTransition, len(c.Instances))
	for i, inst := range c.Instances {
		if err := inst.log.Sync(); err != nil {
			return nil, err
		}
		f, err := os.Open(inst.log.Name())
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var rec struct {
				Time    time.Time `json:"time"`
				Msg     string    `json:"msg"`
				Breaker string    `json:"breaker"`
				From    string    `json:"from"`
				To      string    `json:"to"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "breaker state" && rec.Breaker == name {
				out[i] = append(out[i], breakerTransition{At: rec.Time, From: rec.From, To: rec.To})
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// closedAfter is, per instance, how long after t its breaker closed for the
// last time (the end of its recovery): 0 if it was closed at t and stayed
// so, -1 if it is not closed at the end of the log.
func closedAfter(log [][]breakerTransition, t time.Time) []time.Duration {
	out := make([]time.Duration, len(log))
	for i, trs := range log {
		state := "closed"
		for _, tr := range trs {
			state = tr.To
			if tr.At.After(t) && tr.To == "closed" {
				out[i] = tr.At.Sub(t)
			}
		}
		if state != "closed" {
			out[i] = -1
		}
	}
	return out
}
