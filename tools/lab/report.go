package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// Report is everything one run measured; it is written as results.json.
type Report struct {
	Started      string        `json:"started"`
	TotalSeconds float64       `json:"total_seconds"`
	Instances    int           `json:"instances"`
	PerInstance  int           `json:"per_instance"`
	DelayMs      float64       `json:"link_delay_ms"`
	Binary       string        `json:"binary"`
	Experiments  []*Experiment `json:"experiments"`
}

// Experiment is one experiment's setup, rows and verdicts.
type Experiment struct {
	Name    string     `json:"name"`
	Title   string     `json:"title"`
	Setup   string     `json:"setup"`
	Expect  string     `json:"expect"`
	Columns []string   `json:"columns"`
	Table   [][]string `json:"table"` // the printed lines, one per row or phase
	Rows    []*Row     `json:"rows"`
	Checks  []Check    `json:"checks"`
	Notes   []string   `json:"notes,omitempty"`
	Seconds float64    `json:"seconds"`
	Error   string     `json:"error,omitempty"`
	// Skipped says why the experiment could not run on this machine (a
	// program it needs is missing); it is neither a pass nor a failure.
	Skipped string `json:"skipped,omitempty"`
	// upkeepScans: the app's own upkeep also scans products_pkey (the
	// unknown-id filter's catch-ups: PostgreSQL's planner probes the index
	// for the range's end, which idx_scan counts), so idx_scan and the
	// Execute messages are not compared.
	upkeepScans bool
}

// Row is one configuration (or one phase) of an experiment.
type Row struct {
	Label string            `json:"label"`
	Env   map[string]string `json:"env,omitempty"` // what this row sets on every instance
	// DBQueries is the number of product-by-id queries PostgreSQL executed
	// over the cluster's life (idx_scan of products_pkey, read after the
	// instances stopped), including any the lab ran itself (Direct).
	DBQueries int64 `json:"db_queries"`
	// LinkExecutes counts the queries that crossed the database link after
	// the cluster was ready (Execute messages seen by the proxy).
	LinkExecutes int64 `json:"db_link_executes"`
	// Direct counts the lab's own statements that scanned products_pkey.
	Direct  int64              `json:"lab_direct_queries,omitempty"`
	Phases  []*Phase           `json:"phases"`
	Figures map[string]float64 `json:"figures,omitempty"`
	Values  map[string]string  `json:"values,omitempty"`
	App     map[string]float64 `json:"app_metrics,omitempty"` // stampede_* summed over the instances
}

// Phase is one load (or wait) within a row, with what crossed the links.
type Phase struct {
	Name      string      `json:"name"`
	Load      *LoadStats  `json:"load,omitempty"`
	DBLink    ProxyStats  `json:"db_link"`
	RedisLink *ProxyStats `json:"redis_link,omitempty"`
	results   []Result
}

// Check is one expectation tested against the figures of the run.
type Check struct {
	What string `json:"what"`
	OK   bool   `json:"ok"`
}

func (x *Experiment) check(ok bool, format string, args ...any) {
	x.Checks = append(x.Checks, Check{What: fmt.Sprintf(format, args...), OK: ok})
}

func (x *Experiment) note(format string, args ...any) {
	x.Notes = append(x.Notes, fmt.Sprintf(format, args...))
}

func (x *Experiment) fail(err error) *Experiment {
	if err != nil {
		x.Error = err.Error()
	}
	return x
}

// phase returns the named phase of r, or nil.
func (r *Row) phase(name string) *Phase {
	for _, p := range r.Phases {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// print writes the experiment as a titled table with its checks and notes.
func (x *Experiment) print(w io.Writer) {
	fmt.Fprintf(w, "== %s: %s (%.1f s)\n", x.Name, x.Title, x.Seconds)
	fmt.Fprintf(w, "   setup:  %s\n", x.Setup)
	fmt.Fprintf(w, "   expect: %s\n\n", x.Expect)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprintln(tw, strings.Join(x.Columns, "\t")+"\t")
	for _, cells := range x.Table {
		for len(cells) < len(x.Columns) {
			cells = append(cells, "")
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	for _, c := range x.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "   [%s] %s\n", mark, c.What)
	}
	for _, n := range x.Notes {
		fmt.Fprintf(w, "   note: %s\n", n)
	}
	if x.Error != "" {
		fmt.Fprintf(w, "   ERROR: %s\n", x.Error)
	}
	if x.Skipped != "" {
		fmt.Fprintf(w, "   SKIPPED: %s\n", x.Skipped)
	}
	fmt.Fprintln(w)
}

// summary prints the failed checks and errors of the run and returns how
// many experiments did not complete.
func (r *Report) summary(w io.Writer) int {
	var failed, checks, bad int
	for _, x := range r.Experiments {
		if x.Skipped != "" {
			fmt.Fprintf(w, "experiment %s skipped: %s\n", x.Name, x.Skipped)
		}
		if x.Error != "" {
			failed++
			fmt.Fprintf(w, "experiment %s did not complete: %s\n", x.Name, x.Error)
		}
		for _, c := range x.Checks {
			checks++
			if !c.OK {
				bad++
				fmt.Fprintf(w, "check failed in %s: %s\n", x.Name, c.What)
			}
		}
	}
	fmt.Fprintf(w, "%d experiments, %d checks, %d failed checks, %d experiments with errors\n",
		len(r.Experiments), checks, bad, failed)
	return failed
}

// write stores results.json and, when the cold-key experiment ran, the two
// charts; it returns the paths written.
func (r *Report) write(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "results.json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	files := []string{path}
	for _, x := range r.Experiments {
		if x.Name != "cold-key" || len(x.Rows) == 0 {
			continue
		}
		var modes []string
		var queries, p50, p99 []float64
		for _, row := range x.Rows {
			modes = append(modes, row.Label)
			queries = append(queries, float64(row.DBQueries))
			if p := row.phase("burst"); p != nil && p.Load != nil {
				p50 = append(p50, p.Load.P50Ms)
				p99 = append(p99, p.Load.P99Ms)
			} else {
				p50, p99 = append(p50, 0), append(p99, 0)
			}
		}
		subtitle := fmt.Sprintf("one cold key: %d instances × %d concurrent GET /products/1, %.0f ms on the DB link",
			r.Instances, r.PerInstance, r.DelayMs)
		charts := []struct {
			name, title, unit string
			series            []Series
		}{
			{"queries.svg", "Database queries per cache mode", "queries",
				[]Series{{Name: "DB queries (pg_stat)", Color: "#c0392b", Values: queries}}},
			{"latency.svg", "Latency per cache mode", "ms",
				[]Series{{Name: "p50", Color: "#2980b9", Values: p50}, {Name: "p99", Color: "#e67e22", Values: p99}}},
		}
		for _, c := range charts {
			p := filepath.Join(dir, c.name)
			f, err := os.Create(p)
			if err != nil {
				return files, err
			}
			err = writeBarChart(f, c.title, subtitle, c.unit, modes, c.series)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return files, err
			}
			files = append(files, p)
		}
	}
	return files, nil
}
